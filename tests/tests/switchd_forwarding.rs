//! The forwarding loop and the port adapters on real veths, below the
//! daemon: a bare pipeline bridging two hosts through AF_PACKET ports, and
//! the AF_PACKET adapter handing VLAN tags to the pipeline as they were on
//! the wire.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dataplane::io::{AfPacket, FrameBatch, PortIo};
use dataplane::pipeline::{PortConfig, Switch, SwitchConfig};
use dataplane::wire::VlanId;
use fabric_tests::{Netns, require_root_and_tools, veth};
use switchd::forwarding::{Attachment, Forwarding, HostIfTarget};

fn vid(id: u16) -> VlanId {
    id
}

/// A namespace holding one veth pair, `va` and `vb`, both up.
fn veth_pair_va_vb(name: &str) -> Netns {
    let ns = Netns::new(name);
    ns.ip(&["link", "add", "va", "type", "veth", "peer", "name", "vb"]);
    ns.ip(&["link", "set", "va", "up"]);
    ns.ip(&["link", "set", "vb", "up"]);
    ns
}

fn wait_for(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn bare_pipeline_bridges_two_hosts_over_af_packet() {
    if !require_root_and_tools("bare_pipeline_bridges_two_hosts_over_af_packet", &["ip", "ping"]) {
        return;
    }
    let sw = Netns::new("fsw");
    let h1 = Netns::new("fh1");
    let h2 = Netns::new("fh2");
    veth(&h1, "eth0", &sw, "eth1");
    veth(&h2, "eth0", &sw, "eth2");
    h1.ip(&["addr", "add", "192.0.2.1/24", "dev", "eth0"]);
    h2.ip(&["addr", "add", "192.0.2.2/24", "dev", "eth0"]);

    let mut switch = Switch::new(SwitchConfig::default());
    switch.create_vlan(vid(10)).unwrap();
    for port in [0, 1] {
        switch.set_port(port, PortConfig { admin_up: true, mtu: 1500, pvid: vid(10), learning: true }).unwrap();
        switch.set_vlan_member(vid(10), port, false).unwrap();
        switch.set_port_oper_status(port, true);
    }
    let dataplane = Arc::new(Mutex::new(switch));
    let forwarding = sw.enter(|| {
        let ports: Vec<Attachment<HostIfTarget>> = vec![
            Attachment::Port { port: 0, io: Box::new(AfPacket::open("eth1").unwrap()) },
            Attachment::Port { port: 1, io: Box::new(AfPacket::open("eth2").unwrap()) },
        ];
        Forwarding::start(dataplane.clone(), ports).unwrap()
    });

    assert!(h1.ping_until("192.0.2.2", Duration::from_secs(5)), "h1 cannot reach h2 through the loop");
    assert!(h1.ping("192.0.2.2", 5));
    assert!(h2.ping("192.0.2.1", 5));
    {
        let switch = dataplane.lock().unwrap();
        let learned: Vec<_> = switch.fdb_entries().collect();
        assert_eq!(learned.len(), 2, "both hosts learned: {learned:?}");
    }
    // Carrier follows the peer: h2's end down takes port 1 down in the
    // pipeline (its MACs flushed), and back up.
    h2.ip(&["link", "set", "eth0", "down"]);
    let oper = |port| dataplane.lock().unwrap().port_oper_status(port);
    assert!(wait_for(|| oper(1) == Some(false)), "port 1 reported down");
    assert_eq!(oper(0), Some(true));
    h2.ip(&["link", "set", "eth0", "up"]);
    assert!(wait_for(|| oper(1) == Some(true)), "port 1 reported up again");
    assert!(h1.ping_until("192.0.2.2", Duration::from_secs(5)), "forwarding after the link came back");

    std::thread::sleep(Duration::from_millis(300));
    let stats = forwarding.device_stats();
    let eth1 = stats.iter().find(|d| d.name == "eth1").expect("eth1 stats");
    assert!(eth1.io.rx_frames >= 10 && eth1.io.tx_frames >= 10, "{eth1:?}");

    // h2's namespace goes away with its veth: the switch's eth2 vanishes.
    // The loop reports the port down and does not spin on the dead socket.
    drop(h2);
    assert!(wait_for(|| oper(1) == Some(false)), "vanished port reported down");
    let wakeups = || forwarding.counters().wakeups.load(std::sync::atomic::Ordering::Relaxed);
    let before = wakeups();
    std::thread::sleep(Duration::from_secs(1));
    let per_second = wakeups() - before;
    assert!(per_second < 300, "the loop woke {per_second} times in an idle second");
    assert!(forwarding.is_running());
    forwarding.stop();
}

/// Hosts whose veths keep the default offloads hand TCP to the kernel
/// with the checksum left to "hardware"; the port adapter completes it, as a
/// wire would have, so TCP between them works through the switch.
#[test]
fn tcp_between_hosts_with_checksum_offload_on() {
    if !require_root_and_tools("tcp_between_hosts_with_checksum_offload_on", &["ip"]) {
        return;
    }
    use std::io::{Read, Write};
    let sw = Netns::new("fcs");
    let h1 = Netns::new("fc1");
    let h2 = Netns::new("fc2");
    veth(&h1, "eth0", &sw, "eth1");
    veth(&h2, "eth0", &sw, "eth2");
    // Checksum offload stays on; only TSO/GSO off so segments fit the
    // ring slots.
    h1.disable_segmentation_offloads("eth0");
    h2.disable_segmentation_offloads("eth0");
    h1.ip(&["addr", "add", "192.0.2.1/24", "dev", "eth0"]);
    h2.ip(&["addr", "add", "192.0.2.2/24", "dev", "eth0"]);

    let mut switch = Switch::new(SwitchConfig::default());
    switch.create_vlan(vid(10)).unwrap();
    for port in [0, 1] {
        switch.set_port(port, PortConfig { admin_up: true, mtu: 1500, pvid: vid(10), learning: true }).unwrap();
        switch.set_vlan_member(vid(10), port, false).unwrap();
    }
    let dataplane = Arc::new(Mutex::new(switch));
    let forwarding = sw.enter(|| {
        let ports: Vec<Attachment<HostIfTarget>> = vec![
            Attachment::Port { port: 0, io: Box::new(AfPacket::open("eth1").unwrap()) },
            Attachment::Port { port: 1, io: Box::new(AfPacket::open("eth2").unwrap()) },
        ];
        Forwarding::start(dataplane.clone(), ports).unwrap()
    });
    let listener = h2.enter(|| std::net::TcpListener::bind("192.0.2.2:7070").unwrap());
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut data = Vec::new();
        conn.read_to_end(&mut data).unwrap();
        conn.write_all(&data).unwrap();
    });
    let echoed = h1.enter(|| {
        let mut stream =
            std::net::TcpStream::connect_timeout(&"192.0.2.2:7070".parse().unwrap(), Duration::from_secs(5))
                .expect("TCP connect through the switch with offloads on");
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        stream.write_all(&[7u8; 5000]).unwrap();
        stream.shutdown(std::net::Shutdown::Write).unwrap();
        let mut back = Vec::new();
        stream.read_to_end(&mut back).expect("echo");
        back.len()
    });
    assert_eq!(echoed, 5000);
    server.join().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let completed: u64 = forwarding.device_stats().iter().map(|d| d.io.rx_checksum_partial).sum();
    assert!(completed > 0, "the hosts did leave checksums to offload (else this test proves nothing)");
    forwarding.stop();
}

#[test]
fn af_packet_sees_vlan_tags_and_not_its_own_frames() {
    if !require_root_and_tools("af_packet_sees_vlan_tags_and_not_its_own_frames", &["ip"]) {
        return;
    }
    let ns = veth_pair_va_vb("fvl");
    ns.enter(|| {
        let mut a = AfPacket::open("va").unwrap();
        let mut b = AfPacket::open("vb").unwrap();
        let mut frame = [0u8; 64];
        frame[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
        frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
        // 802.1Q, PCP 5, VID 100, then an experimental EtherType.
        frame[12..16].copy_from_slice(&[0x81, 0x00, 0xa0, 0x64]);
        frame[16..18].copy_from_slice(&[0x88, 0xb5]);
        for i in 0..50u8 {
            frame[20] = i;
            a.send(&frame).unwrap();
        }
        a.flush().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let mut batch = FrameBatch::new(64, 2048);
        b.recv_batch(&mut batch).unwrap();
        // The peer kernel's own chatter (IPv6 DAD, MLD) may be there too.
        let ours: Vec<&[u8]> = batch.iter().filter(|f| f[6..12] == frame[6..12]).collect();
        assert_eq!(ours.len(), 50);
        for (i, got) in ours.iter().enumerate() {
            assert_eq!(got.len(), 64);
            assert_eq!(&got[..18], &frame[..18], "tag restored in frame {i}");
            assert_eq!(got[20], i as u8, "order kept");
        }
        // What `va` reads is the peer kernel's chatter (IPv6 DAD, MLD), never
        // the frames it sent itself.
        batch.clear();
        a.recv_batch(&mut batch).unwrap();
        assert!(batch.iter().all(|f| f[6..12] != frame[6..12]), "a socket never reads back its own tx");
    });
}

/// The rx ring's wait: frames that sat in the ring while nobody read it
/// are seen as waiting that long (the kernel's receive timestamp of the
/// oldest frame a read takes, against the clock after the read); frames
/// read at once, as not waiting.
#[test]
fn af_packet_measures_how_long_frames_waited_in_the_rx_ring() {
    if !require_root_and_tools("af_packet_measures_how_long_frames_waited_in_the_rx_ring", &["ip"]) {
        return;
    }
    let ns = veth_pair_va_vb("fwt");
    ns.enter(|| {
        let mut a = AfPacket::open("va").unwrap();
        let mut b = AfPacket::open("vb").unwrap();
        let mut batch = FrameBatch::new(64, 2048);
        let mut frame = [0u8; 64];
        frame[..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1]);
        frame[12..14].copy_from_slice(&[0x88, 0xb5]);
        // Whatever the kernel sent on its own since the link came up.
        std::thread::sleep(Duration::from_millis(50));
        b.recv_batch(&mut batch).unwrap();
        let before = b.stats().rx_wait;
        a.send(&frame).unwrap();
        a.flush().unwrap();
        std::thread::sleep(Duration::from_millis(120));
        batch.clear();
        b.recv_batch(&mut batch).unwrap();
        let after = b.stats().rx_wait;
        assert_eq!(after.count(), before.count() + 1, "one read that found frames: {after:?}");
        assert!(after.max_ns >= 120_000_000, "the frame waited 120 ms in the ring: {after:?}");
        assert!(after.max_ns < 5_000_000_000, "and not absurdly long (clock mix-up): {after:?}");
        assert_eq!(after.over(100_000_000), before.over(100_000_000) + 1, "{after:?}");
    });
}

/// A pipeline with a planted bug: it panics on one particular frame.
struct Buggy(Switch);

impl switchd::forwarding::Dataplane for Buggy {
    type HostIf = HostIfTarget;
    fn process(
        &mut self,
        now: u64,
        port: u16,
        frame: &[u8],
        out: &mut dataplane::pipeline::Output,
    ) -> dataplane::pipeline::Disposition {
        if frame.get(12..15) == Some(&[0x88, 0xb5, 0xee]) {
            panic!("planted pipeline bug");
        }
        switchd::forwarding::Dataplane::process(&mut self.0, now, port, frame, out)
    }
    fn host_send(&mut self, now: u64, host_if: HostIfTarget, frame: &[u8], out: &mut dataplane::pipeline::Output) {
        self.0.host_send(now, host_if, frame, out);
    }
    fn punt_target(&self, egress: &dataplane::pipeline::Egress) -> Option<HostIfTarget> {
        self.0.punt_target(egress)
    }
    fn poll(&mut self, now: u64, out: &mut dataplane::pipeline::Output) {
        switchd::forwarding::Dataplane::poll(&mut self.0, now, out);
    }
    fn set_link_status(&mut self, port: u16, up: bool) {
        switchd::forwarding::Dataplane::set_link_status(&mut self.0, port, up);
    }
    fn count_transmitted(&mut self, port: u16, frame: dataplane::pipeline::TxFrame) {
        self.0.count_transmitted(port, frame);
    }
    fn count_egress_drop(&mut self, port: u16) {
        self.0.count_egress_drop(port);
    }
}

#[test]
fn a_pipeline_panic_costs_a_batch_not_the_switch() {
    if !require_root_and_tools("a_pipeline_panic_costs_a_batch_not_the_switch", &["ip", "ping"]) {
        return;
    }
    let sw = Netns::new("fps");
    let h1 = Netns::new("fp1");
    let h2 = Netns::new("fp2");
    veth(&h1, "eth0", &sw, "eth1");
    veth(&h2, "eth0", &sw, "eth2");
    h1.host_setup("eth0", "192.0.2.1/24", None);
    h2.host_setup("eth0", "192.0.2.2/24", None);
    let mut switch = Switch::new(SwitchConfig::default());
    switch.create_vlan(vid(10)).unwrap();
    for port in [0, 1] {
        switch.set_port(port, PortConfig { admin_up: true, mtu: 1500, pvid: vid(10), learning: true }).unwrap();
        switch.set_vlan_member(vid(10), port, false).unwrap();
    }
    let dataplane = Arc::new(Mutex::new(Buggy(switch)));
    let forwarding = sw.enter(|| {
        let ports: Vec<Attachment<HostIfTarget>> = vec![
            Attachment::Port { port: 0, io: Box::new(AfPacket::open("eth1").unwrap()) },
            Attachment::Port { port: 1, io: Box::new(AfPacket::open("eth2").unwrap()) },
        ];
        Forwarding::start(dataplane.clone(), ports).unwrap()
    });
    assert!(h1.ping_until("192.0.2.2", Duration::from_secs(5)));
    h1.enter(|| {
        let mut port = AfPacket::open("eth0").unwrap();
        let mut frame = vec![0xff; 6];
        frame.extend([0x02, 0, 0, 0, 0, 0xee, 0x88, 0xb5, 0xee]);
        frame.resize(60, 0);
        port.send(&frame).unwrap();
        port.flush().unwrap();
    });
    assert!(wait_for(|| forwarding.counters().panics.load(std::sync::atomic::Ordering::Relaxed) == 1));
    assert!(forwarding.is_running(), "the forwarding thread survived");
    assert!(h1.ping("192.0.2.2", 3), "and still forwards");
    forwarding.stop();
}
