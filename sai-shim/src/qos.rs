//! QoS objects in SAI's model: QoS maps, buffer pools and profiles,
//! ingress priority groups, queues, schedulers and WRED profiles, plus the
//! port (speed, cable length, PFC) and switch (bound maps, PFC timing,
//! watchdog, DLB) attributes that go with them.
//!
//! A backend turns them into its traffic manager's configuration; the soft
//! backend's is [`tm_config`], which gives `qos`'s [`TmConfig`]. That
//! traffic manager's profiles are switch-wide, so the soft backend refuses
//! queues or priority groups of one index that differ between ports.

use qos::buffer::{PgProfile, PoolConfig, QueueLimit};
use qos::classify::{CLASSES, QosMaps};
use qos::dlb::GroupMode;
use qos::scheduler::Discipline;
use qos::shaper::ShaperConfig;
use qos::tm::{EcnSetting, PortConfig, QueueProfile, TmConfig};

use crate::api::{ObjectStore, Sai};
use crate::attributes::{Attribute, NextHopGroup, Object, Reference, check_duplicates, check_settable};
use crate::backend::Backend;
use crate::error::{SaiError, SaiResult};
use crate::object::{ObjectId, ObjectType};

macro_rules! attr_names {
    ($attr:ident { $($variant:ident => $name:literal $(, create_only = $co:literal)?;)* }) => {
        impl Attribute for $attr {
            fn name(&self) -> &'static str {
                match self { $($attr::$variant(..) => $name,)* }
            }
            fn create_only(&self) -> bool {
                match self { $($attr::$variant(..) => false $(|| $co)?,)* }
            }
        }
    };
}

fn invalid(object: ObjectType, attribute: &'static str, reason: impl Into<String>) -> SaiError {
    SaiError::InvalidAttribute { object: object.name(), attribute, reason: reason.into() }
}

fn mandatory<T>(object: ObjectType, attribute: &'static str, value: Option<T>) -> SaiResult<T> {
    value.ok_or(SaiError::MandatoryAttributeMissing { object: object.name(), attribute })
}

// ---------------------------------------------------------------- QoS maps

/// SAI_QOS_MAP_TYPE_*.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QosMapType {
    DscpToTc,
    Dot1pToTc,
    TcToQueue,
    TcToPriorityGroup,
    PfcPriorityToQueue,
    PfcPriorityToPriorityGroup,
}

impl QosMapType {
    /// How many keys the map has (64 DSCPs, 8 of anything else).
    fn keys(self) -> usize {
        if self == QosMapType::DscpToTc { 64 } else { CLASSES }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QosMapAttr {
    Type(QosMapType),
    /// `(key, value)` pairs; keys not listed keep the default map's value.
    MapToValueList(Vec<(u8, u8)>),
}

attr_names!(QosMapAttr {
    Type => "TYPE", create_only = true;
    MapToValueList => "MAP_TO_VALUE_LIST";
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosMap {
    pub map_type: QosMapType,
    pub list: Vec<(u8, u8)>,
}

impl QosMap {
    pub(crate) fn build(attrs: &[QosMapAttr]) -> SaiResult<QosMap> {
        let mut map_type = None;
        let mut list = Vec::new();
        for attr in attrs {
            match attr {
                QosMapAttr::Type(t) => map_type = Some(*t),
                QosMapAttr::MapToValueList(l) => list = l.clone(),
            }
        }
        let map = QosMap { map_type: mandatory(ObjectType::QosMap, "TYPE", map_type)?, list };
        map.validate()?;
        Ok(map)
    }

    pub(crate) fn apply(&mut self, attr: QosMapAttr) -> SaiResult<()> {
        match attr {
            QosMapAttr::Type(t) => self.map_type = t,
            QosMapAttr::MapToValueList(l) => self.list = l,
        }
        self.validate()
    }

    fn validate(&self) -> SaiResult<()> {
        for &(key, value) in &self.list {
            if usize::from(key) >= self.map_type.keys() || usize::from(value) >= CLASSES {
                return Err(invalid(
                    ObjectType::QosMap,
                    "MAP_TO_VALUE_LIST",
                    format!("{key} -> {value}: keys in 0..{}, values in 0..{CLASSES}", self.map_type.keys()),
                ));
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- buffer pool

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BufferPoolAttr {
    /// Bytes.
    Size(u64),
    /// The accounting unit, bytes.
    CellSize(u32),
}

attr_names!(BufferPoolAttr {
    Size => "SIZE";
    CellSize => "CELL_SIZE", create_only = true;
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferPool {
    pub size_bytes: u64,
    pub cell_bytes: u32,
}

impl BufferPool {
    pub(crate) fn build(attrs: &[BufferPoolAttr]) -> SaiResult<BufferPool> {
        let defaults = PoolConfig::default();
        let mut pool = BufferPool { size_bytes: 0, cell_bytes: defaults.cell_bytes };
        let mut size = None;
        for attr in attrs {
            match attr {
                BufferPoolAttr::Size(s) => size = Some(*s),
                other => pool.apply(other.clone()),
            }
        }
        pool.size_bytes = mandatory(ObjectType::BufferPool, "SIZE", size)?;
        Ok(pool)
    }

    pub(crate) fn apply(&mut self, attr: BufferPoolAttr) {
        match attr {
            BufferPoolAttr::Size(s) => self.size_bytes = s,
            BufferPoolAttr::CellSize(c) => self.cell_bytes = c,
        }
    }
}

// ---------------------------------------------------------------- buffer profile

/// SAI_BUFFER_PROFILE_THRESHOLD_MODE with its threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferThreshold {
    /// `alpha = 2^th` of the free shared buffer (SHARED_DYNAMIC_TH).
    Dynamic(i8),
    /// Bytes (SHARED_STATIC_TH).
    Static(u32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BufferProfileAttr {
    PoolId(ObjectId),
    ReservedBufferSize(u32),
    Threshold(BufferThreshold),
    /// The priority group is lossless: PFC instead of drops.
    Lossless(bool),
    /// A lossless PG's headroom, bytes; computed from the port's speed and
    /// cable when absent.
    XoffTh(Option<u32>),
    XonOffsetTh(u32),
}

attr_names!(BufferProfileAttr {
    PoolId => "POOL_ID", create_only = true;
    ReservedBufferSize => "RESERVED_BUFFER_SIZE";
    Threshold => "THRESHOLD_MODE";
    Lossless => "LOSSLESS";
    XoffTh => "XOFF_TH";
    XonOffsetTh => "XON_OFFSET_TH";
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferProfile {
    pub pool: ObjectId,
    pub reserved_bytes: u32,
    pub threshold: BufferThreshold,
    pub lossless: bool,
    pub xoff_bytes: Option<u32>,
    pub xon_offset_bytes: u32,
}

impl BufferProfile {
    pub(crate) fn build(attrs: &[BufferProfileAttr]) -> SaiResult<BufferProfile> {
        let defaults = PgProfile::default();
        let mut pool = None;
        let mut profile = BufferProfile {
            pool: ObjectId::from_raw(0),
            reserved_bytes: defaults.reserved_bytes,
            threshold: BufferThreshold::Dynamic(defaults.dynamic_th),
            lossless: false,
            xoff_bytes: None,
            xon_offset_bytes: defaults.xon_offset_bytes,
        };
        for attr in attrs {
            match attr {
                BufferProfileAttr::PoolId(id) => pool = Some(*id),
                other => profile.apply(other.clone()),
            }
        }
        profile.pool = mandatory(ObjectType::BufferProfile, "POOL_ID", pool)?;
        Ok(profile)
    }

    pub(crate) fn apply(&mut self, attr: BufferProfileAttr) {
        match attr {
            BufferProfileAttr::PoolId(id) => self.pool = id,
            BufferProfileAttr::ReservedBufferSize(b) => self.reserved_bytes = b,
            BufferProfileAttr::Threshold(t) => self.threshold = t,
            BufferProfileAttr::Lossless(l) => self.lossless = l,
            BufferProfileAttr::XoffTh(x) => self.xoff_bytes = x,
            BufferProfileAttr::XonOffsetTh(x) => self.xon_offset_bytes = x,
        }
    }

    pub(crate) fn references(&self) -> Vec<Reference> {
        vec![Reference { attribute: "POOL_ID", id: self.pool, expected: &[ObjectType::BufferPool] }]
    }

    /// As an ingress priority group's profile.
    fn pg_profile(&self) -> SaiResult<PgProfile> {
        let BufferThreshold::Dynamic(dynamic_th) = self.threshold else {
            return Err(SaiError::NotSupported("a static threshold on an ingress priority group".into()));
        };
        Ok(PgProfile {
            lossless: self.lossless,
            reserved_bytes: self.reserved_bytes,
            dynamic_th,
            headroom_bytes: self.xoff_bytes,
            xon_offset_bytes: self.xon_offset_bytes,
        })
    }

    /// As a queue's (egress) limit.
    fn queue_limit(&self) -> QueueLimit {
        match self.threshold {
            BufferThreshold::Dynamic(th) => QueueLimit::Dynamic { th },
            BufferThreshold::Static(bytes) => QueueLimit::Static { bytes },
        }
    }
}

// ---------------------------------------------------------------- scheduler

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulingType {
    Strict,
    Dwrr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedulerAttr {
    SchedulingType(SchedulingType),
    /// DWRR weight, 1..=255.
    SchedulingWeight(u8),
    /// Shaper rate, bits per second; 0 = no shaper.
    MaxBandwidthRate(u64),
    /// Shaper bucket, bytes.
    MaxBurstSize(u32),
}

attr_names!(SchedulerAttr {
    SchedulingType => "SCHEDULING_TYPE";
    SchedulingWeight => "SCHEDULING_WEIGHT";
    MaxBandwidthRate => "MAX_BANDWIDTH_RATE";
    MaxBurstSize => "MAX_BANDWIDTH_BURST_RATE";
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheduler {
    pub scheduling_type: SchedulingType,
    pub weight: u8,
    pub max_rate_bps: u64,
    pub max_burst_bytes: u32,
}

impl Scheduler {
    pub(crate) fn build(attrs: &[SchedulerAttr]) -> SaiResult<Scheduler> {
        let mut scheduler =
            Scheduler { scheduling_type: SchedulingType::Dwrr, weight: 1, max_rate_bps: 0, max_burst_bytes: 0 };
        for attr in attrs {
            scheduler.apply(attr.clone())?;
        }
        Ok(scheduler)
    }

    pub(crate) fn apply(&mut self, attr: SchedulerAttr) -> SaiResult<()> {
        match attr {
            SchedulerAttr::SchedulingType(t) => self.scheduling_type = t,
            SchedulerAttr::SchedulingWeight(0) => {
                return Err(invalid(ObjectType::Scheduler, "SCHEDULING_WEIGHT", "must be at least 1"));
            }
            SchedulerAttr::SchedulingWeight(w) => self.weight = w,
            SchedulerAttr::MaxBandwidthRate(r) => self.max_rate_bps = r,
            SchedulerAttr::MaxBurstSize(b) => self.max_burst_bytes = b,
        }
        Ok(())
    }

    fn discipline(&self) -> Discipline {
        match self.scheduling_type {
            SchedulingType::Strict => Discipline::Strict,
            SchedulingType::Dwrr => Discipline::Dwrr { weight: self.weight },
        }
    }

    fn shaper(&self) -> Option<ShaperConfig> {
        (self.max_rate_bps > 0)
            .then_some(ShaperConfig { rate_bps: self.max_rate_bps, burst_bytes: self.max_burst_bytes })
    }
}

// ---------------------------------------------------------------- WRED

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WredAttr {
    /// Marking (and dropping of non-ECT frames): DCQCN's profile scaled to
    /// each port's speed, or explicit thresholds.
    EcnMarkMode(EcnSetting),
}

attr_names!(WredAttr {
    EcnMarkMode => "ECN_MARK_MODE";
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wred {
    pub ecn: EcnSetting,
}

impl Wred {
    pub(crate) fn build(attrs: &[WredAttr]) -> SaiResult<Wred> {
        let mut wred = Wred { ecn: EcnSetting::Dcqcn };
        for attr in attrs {
            wred.apply(attr.clone())?;
        }
        Ok(wred)
    }

    pub(crate) fn apply(&mut self, attr: WredAttr) -> SaiResult<()> {
        match attr {
            WredAttr::EcnMarkMode(setting) => {
                if let EcnSetting::Profile(profile) = setting
                    && let Err((field, reason)) = profile.validate()
                {
                    return Err(invalid(ObjectType::Wred, "ECN_MARK_MODE", format!("{field}: {reason}")));
                }
                self.ecn = setting;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- ingress priority group

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IngressPriorityGroupAttr {
    Port(ObjectId),
    Index(u8),
    BufferProfile(Option<ObjectId>),
}

attr_names!(IngressPriorityGroupAttr {
    Port => "PORT", create_only = true;
    Index => "INDEX", create_only = true;
    BufferProfile => "BUFFER_PROFILE";
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngressPriorityGroup {
    pub port: ObjectId,
    pub index: u8,
    pub buffer_profile: Option<ObjectId>,
}

impl IngressPriorityGroup {
    pub(crate) fn build(attrs: &[IngressPriorityGroupAttr]) -> SaiResult<IngressPriorityGroup> {
        let (mut port, mut index, mut buffer_profile) = (None, None, None);
        for attr in attrs {
            match attr {
                IngressPriorityGroupAttr::Port(p) => port = Some(*p),
                IngressPriorityGroupAttr::Index(i) => index = Some(*i),
                IngressPriorityGroupAttr::BufferProfile(b) => buffer_profile = *b,
            }
        }
        let index = mandatory(ObjectType::IngressPriorityGroup, "INDEX", index)?;
        if usize::from(index) >= CLASSES {
            return Err(invalid(ObjectType::IngressPriorityGroup, "INDEX", format!("{index} is not in 0..{CLASSES}")));
        }
        Ok(IngressPriorityGroup {
            port: mandatory(ObjectType::IngressPriorityGroup, "PORT", port)?,
            index,
            buffer_profile,
        })
    }

    pub(crate) fn apply(&mut self, attr: IngressPriorityGroupAttr) {
        match attr {
            IngressPriorityGroupAttr::Port(p) => self.port = p,
            IngressPriorityGroupAttr::Index(i) => self.index = i,
            IngressPriorityGroupAttr::BufferProfile(b) => self.buffer_profile = b,
        }
    }

    pub(crate) fn references(&self) -> Vec<Reference> {
        let mut references = vec![Reference { attribute: "PORT", id: self.port, expected: &[ObjectType::Port] }];
        references.extend(self.buffer_profile.map(|id| Reference {
            attribute: "BUFFER_PROFILE",
            id,
            expected: &[ObjectType::BufferProfile],
        }));
        references
    }
}

// ---------------------------------------------------------------- queue

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueAttr {
    Port(ObjectId),
    Index(u8),
    SchedulerProfileId(Option<ObjectId>),
    WredProfileId(Option<ObjectId>),
    BufferProfileId(Option<ObjectId>),
}

attr_names!(QueueAttr {
    Port => "PORT", create_only = true;
    Index => "INDEX", create_only = true;
    SchedulerProfileId => "SCHEDULER_PROFILE_ID";
    WredProfileId => "WRED_PROFILE_ID";
    BufferProfileId => "BUFFER_PROFILE_ID";
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queue {
    pub port: ObjectId,
    pub index: u8,
    pub scheduler: Option<ObjectId>,
    pub wred: Option<ObjectId>,
    pub buffer_profile: Option<ObjectId>,
}

impl Queue {
    pub(crate) fn build(attrs: &[QueueAttr]) -> SaiResult<Queue> {
        let (mut port, mut index) = (None, None);
        let mut queue =
            Queue { port: ObjectId::from_raw(0), index: 0, scheduler: None, wred: None, buffer_profile: None };
        for attr in attrs {
            match attr {
                QueueAttr::Port(p) => port = Some(*p),
                QueueAttr::Index(i) => index = Some(*i),
                other => queue.apply(other.clone()),
            }
        }
        queue.port = mandatory(ObjectType::Queue, "PORT", port)?;
        queue.index = mandatory(ObjectType::Queue, "INDEX", index)?;
        if usize::from(queue.index) >= CLASSES {
            return Err(invalid(ObjectType::Queue, "INDEX", format!("{} is not in 0..{CLASSES}", queue.index)));
        }
        Ok(queue)
    }

    pub(crate) fn apply(&mut self, attr: QueueAttr) {
        match attr {
            QueueAttr::Port(p) => self.port = p,
            QueueAttr::Index(i) => self.index = i,
            QueueAttr::SchedulerProfileId(s) => self.scheduler = s,
            QueueAttr::WredProfileId(w) => self.wred = w,
            QueueAttr::BufferProfileId(b) => self.buffer_profile = b,
        }
    }

    pub(crate) fn references(&self) -> Vec<Reference> {
        let mut references = vec![Reference { attribute: "PORT", id: self.port, expected: &[ObjectType::Port] }];
        references.extend(self.scheduler.map(|id| Reference {
            attribute: "SCHEDULER_PROFILE_ID",
            id,
            expected: &[ObjectType::Scheduler],
        }));
        references.extend(self.wred.map(|id| Reference {
            attribute: "WRED_PROFILE_ID",
            id,
            expected: &[ObjectType::Wred],
        }));
        references.extend(self.buffer_profile.map(|id| Reference {
            attribute: "BUFFER_PROFILE_ID",
            id,
            expected: &[ObjectType::BufferProfile],
        }));
        references
    }
}

// ---------------------------------------------------------------- API

macro_rules! object_api {
    ($create:ident, $get:ident, $set:ident, $ty:ident, $attr:ident, $name:literal, $build:expr, $apply:expr) => {
        pub fn $create(&mut self, attrs: &[$attr]) -> SaiResult<ObjectId> {
            check_duplicates($name, attrs)?;
            self.create_object(Object::$ty($build(attrs)?))
        }

        pub fn $get(&self, id: ObjectId) -> SaiResult<$ty> {
            match self.get_object(id, ObjectType::$ty)? {
                Object::$ty(o) => Ok(o.clone()),
                _ => unreachable!(),
            }
        }

        pub fn $set(&mut self, id: ObjectId, attr: $attr) -> SaiResult<()> {
            check_settable($name, &attr)?;
            self.set_object(id, ObjectType::$ty, |o| match o {
                Object::$ty(o) => $apply(o, attr),
                _ => Ok(()),
            })
        }
    };
}

impl<B: Backend> Sai<B> {
    object_api!(
        create_qos_map,
        get_qos_map,
        set_qos_map_attribute,
        QosMap,
        QosMapAttr,
        "qos map",
        QosMap::build,
        |o: &mut QosMap, a| o.apply(a)
    );
    object_api!(
        create_buffer_pool,
        get_buffer_pool,
        set_buffer_pool_attribute,
        BufferPool,
        BufferPoolAttr,
        "buffer pool",
        BufferPool::build,
        |o: &mut BufferPool, a| {
            o.apply(a);
            Ok(())
        }
    );
    object_api!(
        create_buffer_profile,
        get_buffer_profile,
        set_buffer_profile_attribute,
        BufferProfile,
        BufferProfileAttr,
        "buffer profile",
        BufferProfile::build,
        |o: &mut BufferProfile, a| {
            o.apply(a);
            Ok(())
        }
    );
    object_api!(
        create_scheduler,
        get_scheduler,
        set_scheduler_attribute,
        Scheduler,
        SchedulerAttr,
        "scheduler",
        Scheduler::build,
        |o: &mut Scheduler, a| o.apply(a)
    );
    object_api!(create_wred, get_wred, set_wred_attribute, Wred, WredAttr, "wred", Wred::build, |o: &mut Wred, a| o
        .apply(a));
    object_api!(
        create_ingress_priority_group,
        get_ingress_priority_group,
        set_ingress_priority_group_attribute,
        IngressPriorityGroup,
        IngressPriorityGroupAttr,
        "ingress priority group",
        IngressPriorityGroup::build,
        |o: &mut IngressPriorityGroup, a| {
            o.apply(a);
            Ok(())
        }
    );
    object_api!(
        create_queue,
        get_queue,
        set_queue_attribute,
        Queue,
        QueueAttr,
        "queue",
        Queue::build,
        |o: &mut Queue, a| {
            o.apply(a);
            Ok(())
        }
    );
}

/// Identity checks of QoS objects: one priority group and one queue per
/// (port, index).
pub(crate) fn check_unique(store: &ObjectStore, id: Option<ObjectId>, object: &Object) -> SaiResult<()> {
    let clash = |object_type: ObjectType, same: &dyn Fn(&Object) -> bool| {
        store.objects_of(object_type).any(|(other, o)| Some(other) != id && same(o))
    };
    let (port, index, object_type) = match object {
        Object::IngressPriorityGroup(pg) => (pg.port, pg.index, ObjectType::IngressPriorityGroup),
        Object::Queue(queue) => (queue.port, queue.index, ObjectType::Queue),
        _ => return Ok(()),
    };
    let same = |o: &Object| match o {
        Object::IngressPriorityGroup(p) => (p.port, p.index) == (port, index),
        Object::Queue(q) => (q.port, q.index) == (port, index),
        _ => false,
    };
    if clash(object_type, &same) {
        return Err(SaiError::AlreadyExists(format!("{object_type} {index} of {port}")));
    }
    Ok(())
}

// ---------------------------------------------------------------- to the traffic manager

/// The `qos` traffic manager's configuration from the QoS objects, ports
/// by `port_index` (the pipeline's). `None` when nothing asks for one: no
/// port has a speed and no QoS object exists.
pub fn tm_config(
    store: &ObjectStore,
    port_index: impl Fn(ObjectId) -> Option<u16>,
    group_index: impl Fn(ObjectId) -> Option<u32>,
) -> SaiResult<Option<TmConfig>> {
    let switch = store.switch();
    let mut ports: Vec<(u16, ObjectId, &crate::attributes::Port)> = store
        .objects_of(ObjectType::Port)
        .filter_map(|(id, o)| match o {
            Object::Port(port) => port_index(id).map(|index| (index, id, port)),
            _ => None,
        })
        .collect();
    ports.sort_by_key(|(index, ..)| *index);
    let any_qos_object = [
        ObjectType::QosMap,
        ObjectType::BufferPool,
        ObjectType::IngressPriorityGroup,
        ObjectType::Queue,
        ObjectType::Scheduler,
        ObjectType::Wred,
    ]
    .into_iter()
    .any(|t| store.objects_of(t).next().is_some());
    if !any_qos_object && ports.iter().all(|(_, _, p)| p.speed_bps == 0) && switch.qos_maps.is_empty() {
        return Ok(None);
    }

    let mut config = TmConfig::default();
    let mut pfc_mask: Option<u8> = None;
    for &(index, id, port) in &ports {
        if port.speed_bps == 0 {
            return Err(invalid(
                ObjectType::Port,
                "SPEED",
                format!("{} ({id}) has none, and the traffic manager needs every port's", port.name),
            ));
        }
        let slot = usize::from(index);
        if config.ports.len() <= slot {
            // A removed port's slot: it sends nothing, any speed does.
            config.ports.resize(slot + 1, PortConfig::new(port.speed_bps));
        }
        config.ports[slot] = PortConfig {
            speed_bps: port.speed_bps,
            cable_length_m: port.cable_length_m,
            mtu: u32::from(port.mtu) + 18, // Ethernet header and one tag
            shaper: None,
        };
        match pfc_mask {
            None => pfc_mask = Some(port.priority_flow_control),
            Some(mask) if mask != port.priority_flow_control => {
                return Err(SaiError::NotSupported(format!(
                    "PRIORITY_FLOW_CONTROL differs between ports ({} has {:#04x}, others {mask:#04x}): the soft backend's PFC is switch-wide",
                    port.name, port.priority_flow_control
                )));
            }
            Some(_) => {}
        }
    }
    let mask = pfc_mask.unwrap_or(0);
    config.pfc.priorities = (0..CLASSES as u8).filter(|p| mask & (1 << p) != 0).collect();
    config.pfc.quanta = switch.pfc_quanta;
    config.pfc.response_ns = switch.pfc_response_ns;
    config.pfc.rx_lag_ns = switch.pfc_rx_lag_ns;
    config.watchdog = switch.pfc_watchdog;
    config.dlb = switch.dlb.clone();
    // Groups with a mode of their own, by the pipeline's group index.
    config.dlb.groups.extend(store.objects_of(ObjectType::NextHopGroup).filter_map(|(id, o)| match o {
        Object::NextHopGroup(NextHopGroup { dlb_mode: Some(mode) }) => {
            group_index(id).map(|group| GroupMode { group, mode: *mode })
        }
        _ => None,
    }));
    config.maps = maps(store, switch)?;

    let pools: Vec<&BufferPool> = store
        .objects_of(ObjectType::BufferPool)
        .filter_map(|(_, o)| if let Object::BufferPool(p) = o { Some(p) } else { None })
        .collect();
    match pools[..] {
        [] => {}
        [pool] => config.pool = PoolConfig { size_bytes: pool.size_bytes, cell_bytes: pool.cell_bytes },
        _ => return Err(SaiError::NotSupported("more than one buffer pool".into())),
    }

    let profile = |id: ObjectId| match store.get(id) {
        Some(Object::BufferProfile(p)) => Ok(p),
        _ => Err(SaiError::UnknownObject(id)),
    };
    let mut pgs: [Option<(ObjectId, PgProfile)>; CLASSES] = [None; CLASSES];
    for (_, o) in store.objects_of(ObjectType::IngressPriorityGroup) {
        let Object::IngressPriorityGroup(pg) = o else { continue };
        let this = match pg.buffer_profile {
            Some(id) => profile(id)?.pg_profile()?,
            None => PgProfile::default(),
        };
        same_everywhere(&mut pgs[usize::from(pg.index)], pg.port, this, "ingress priority group", pg.index)?;
    }
    for (index, pg) in pgs.iter().enumerate() {
        if let Some((_, profile)) = pg {
            config.priority_groups[index] = *profile;
        }
    }
    let mut queues: [Option<(ObjectId, QueueProfile)>; CLASSES] = [None; CLASSES];
    for (_, o) in store.objects_of(ObjectType::Queue) {
        let Object::Queue(queue) = o else { continue };
        let mut this = QueueProfile::default();
        if let Some(id) = queue.scheduler {
            let Some(Object::Scheduler(s)) = store.get(id) else { return Err(SaiError::UnknownObject(id)) };
            this.scheduler = s.discipline();
            this.shaper = s.shaper();
        }
        if let Some(id) = queue.wred {
            let Some(Object::Wred(w)) = store.get(id) else { return Err(SaiError::UnknownObject(id)) };
            this.ecn = w.ecn;
        }
        if let Some(id) = queue.buffer_profile {
            this.limit = profile(id)?.queue_limit();
        }
        same_everywhere(&mut queues[usize::from(queue.index)], queue.port, this, "queue", queue.index)?;
    }
    for (index, queue) in queues.iter().enumerate() {
        if let Some((_, profile)) = queue {
            config.queues[index] = *profile;
        }
    }
    config.validate().map_err(|e| SaiError::InvalidAttribute {
        object: "traffic manager",
        attribute: "configuration",
        reason: e.to_string(),
    })?;
    Ok(Some(config))
}

/// The traffic manager's profiles are switch-wide: the first port's
/// profile of an index is everyone's, and another port's different one is
/// refused.
fn same_everywhere<T: PartialEq + Copy>(
    slot: &mut Option<(ObjectId, T)>,
    port: ObjectId,
    this: T,
    what: &str,
    index: u8,
) -> SaiResult<()> {
    match slot {
        None => *slot = Some((port, this)),
        Some((first, profile)) if *profile != this => {
            return Err(SaiError::NotSupported(format!(
                "{what} {index} of {port} differs from that of {first}: the soft backend's profiles are switch-wide"
            )));
        }
        Some(_) => {}
    }
    Ok(())
}

/// The switch's bound maps over the defaults.
fn maps(store: &ObjectStore, switch: &crate::attributes::Switch) -> SaiResult<QosMaps> {
    let mut maps = QosMaps { trust: switch.qos_trust, ..QosMaps::default() };
    for &id in &switch.qos_maps {
        let Some(Object::QosMap(map)) = store.get(id) else { return Err(SaiError::UnknownObject(id)) };
        let table: &mut [u8] = match map.map_type {
            QosMapType::DscpToTc => &mut maps.dscp_to_tc,
            QosMapType::Dot1pToTc => &mut maps.pcp_to_tc,
            QosMapType::TcToQueue => &mut maps.tc_to_queue,
            QosMapType::TcToPriorityGroup => &mut maps.tc_to_pg,
            QosMapType::PfcPriorityToQueue => &mut maps.pfc_priority_to_queue,
            QosMapType::PfcPriorityToPriorityGroup => &mut maps.pfc_priority_to_pg,
        };
        for &(key, value) in &map.list {
            table[usize::from(key)] = value;
        }
    }
    Ok(maps)
}
