//! A synchronous rtnetlink transport (netlink-sys's blocking socket and
//! netlink-packet-route's messages), because the shim's [`crate::Backend`]
//! is synchronous: a call returns once the kernel acknowledged every request
//! it sent, or with the kernel's error.
//!
//! Requests carry `NLM_F_ACK`; the socket has `NETLINK_CAP_ACK` (errors come
//! back without a copy of the request) and `NETLINK_EXT_ACK` (the kernel's
//! own words for what is wrong, e.g. "Nexthop id does not exist").

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;

use netlink_packet_core::{
    DecodeError, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, NetlinkBuffer, NetlinkDeserializable, NetlinkHeader,
    NetlinkMessage, NetlinkPayload, NetlinkSerializable, NlasIterator,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

use super::nexthop_wire::{NexthopMessage, NexthopOperation};

/// Any message the backend sends or receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Route(RouteNetlinkMessage),
    Nexthop(NexthopMessage),
}

impl NetlinkSerializable for Message {
    fn message_type(&self) -> u16 {
        match self {
            Message::Route(message) => message.message_type(),
            Message::Nexthop(message) => message.operation.message_type(),
        }
    }

    fn buffer_len(&self) -> usize {
        match self {
            Message::Route(message) => NetlinkSerializable::buffer_len(message),
            Message::Nexthop(message) => message.buffer_len(),
        }
    }

    fn serialize(&self, buffer: &mut [u8]) {
        match self {
            Message::Route(message) => message.serialize(buffer),
            Message::Nexthop(message) => message.emit(buffer),
        }
    }
}

impl NetlinkDeserializable for Message {
    type Error = DecodeError;

    fn deserialize(header: &NetlinkHeader, payload: &[u8]) -> Result<Self, Self::Error> {
        match NexthopOperation::of_message_type(header.message_type) {
            Some(operation) => Ok(Message::Nexthop(NexthopMessage::parse(operation, payload)?)),
            None => Ok(Message::Route(RouteNetlinkMessage::deserialize(header, payload)?)),
        }
    }
}

/// One change request: a message and its `NLM_F_CREATE`/`EXCL`/`REPLACE`/
/// `APPEND` flags (`NLM_F_REQUEST | NLM_F_ACK` are added on sending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub message: Message,
    pub flags: u16,
}

impl Request {
    pub fn route(message: RouteNetlinkMessage, flags: u16) -> Request {
        Request { message: Message::Route(message), flags }
    }

    pub fn nexthop(message: NexthopMessage, flags: u16) -> Request {
        Request { message: Message::Nexthop(message), flags }
    }
}

/// What the kernel refused, in its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetlinkError {
    /// The positive errno (`EEXIST`, `ENETUNREACH`...); 0 for a reply that
    /// could not be read at all.
    pub errno: i32,
    /// The extended ACK message, when the kernel gave one.
    pub message: Option<String>,
}

impl NetlinkError {
    fn io(error: io::Error) -> NetlinkError {
        NetlinkError { errno: error.raw_os_error().unwrap_or(0), message: Some(error.to_string()) }
    }

    fn decode(error: DecodeError) -> NetlinkError {
        NetlinkError { errno: 0, message: Some(format!("unreadable reply: {error}")) }
    }
}

impl fmt::Display for NetlinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.errno != 0 {
            write!(f, "{}", io::Error::from_raw_os_error(self.errno))?;
        }
        match &self.message {
            Some(message) if self.errno != 0 => write!(f, " ({message})"),
            Some(message) => f.write_str(message),
            None => Ok(()),
        }
    }
}

/// `nlmsgerr` TLV carrying the kernel's error string (`NLMSGERR_ATTR_MSG`).
const NLMSGERR_ATTR_MSG: u16 = 1;
/// With `NETLINK_CAP_ACK` an error carries the request's header only.
const NLMSG_HEADER_LEN: usize = 16;
const RECEIVE_BUFFER: usize = 1 << 16;

fn error_of(code: i32, payload: &[u8]) -> NetlinkError {
    let message = payload.get(NLMSG_HEADER_LEN..).and_then(|tlvs| {
        NlasIterator::new(tlvs).filter_map(Result::ok).find(|nla| nla.kind() == NLMSGERR_ATTR_MSG).map(|nla| {
            let value = nla.value();
            String::from_utf8_lossy(value.split(|b| *b == 0).next().unwrap_or(value)).into_owned()
        })
    });
    NetlinkError { errno: code.abs(), message }
}

/// The request socket: one request (or one batch) at a time, answered in order.
pub struct Netlink {
    socket: Socket,
    sequence: Cell<u32>,
    buffer: RefCell<Vec<u8>>,
}

impl fmt::Debug for Netlink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Netlink").field("sequence", &self.sequence.get()).finish()
    }
}

impl Netlink {
    pub fn open() -> io::Result<Netlink> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        socket.set_ext_ack(true)?;
        socket.set_cap_ack(true)?;
        // Large dumps (a full table) and batches of acks.
        let _ = socket.set_rx_buf_sz(8 << 20);
        Ok(Netlink { socket, sequence: Cell::new(0), buffer: RefCell::new(Vec::with_capacity(RECEIVE_BUFFER)) })
    }

    fn next_sequence(&self) -> u32 {
        let sequence = self.sequence.get().wrapping_add(1).max(1);
        self.sequence.set(sequence);
        sequence
    }

    fn frame(&self, message: Message, flags: u16, sequence: u32, out: &mut Vec<u8>) {
        let mut header = NetlinkHeader::default();
        header.flags = flags;
        header.sequence_number = sequence;
        let mut packet = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(message));
        packet.finalize();
        let start = out.len();
        out.resize(start + packet.buffer_len(), 0);
        packet.serialize(&mut out[start..]);
    }

    /// Sends one request and waits for its acknowledgement.
    pub fn request(&self, request: &Request) -> Result<(), NetlinkError> {
        self.batch(std::slice::from_ref(request)).pop().expect("one result per request")
    }

    /// Sends requests in as few datagrams as fit and collects one result per
    /// request, in order. The kernel handles them one after the other; a
    /// failed one does not stop the next.
    pub fn batch(&self, requests: &[Request]) -> Vec<Result<(), NetlinkError>> {
        let mut results: Vec<Option<Result<(), NetlinkError>>> = vec![None; requests.len()];
        let first = self.sequence.get().wrapping_add(1).max(1);
        let mut datagram = Vec::with_capacity(RECEIVE_BUFFER);
        let mut sent = 0;
        for (index, request) in requests.iter().enumerate() {
            let sequence = self.next_sequence();
            debug_assert_eq!(sequence, first.wrapping_add(index as u32));
            self.frame(request.message.clone(), request.flags | NLM_F_REQUEST | NLM_F_ACK, sequence, &mut datagram);
            // Keep datagrams well inside the kernel's receive buffer and
            // leave room for the acks to come back.
            if datagram.len() > 32 * 1024 || index + 1 == requests.len() {
                if let Err(error) = self.socket.send(&datagram, 0) {
                    let error = NetlinkError::io(error);
                    for result in results.iter_mut().skip(sent) {
                        *result = Some(Err(error.clone()));
                    }
                    // Collect what was sent before giving up on the rest.
                    let unsent = requests.len() - sent;
                    let _ = self.collect_acks(first, &mut results[..requests.len() - unsent]);
                    return results.into_iter().map(|r| r.expect("filled")).collect();
                }
                datagram.clear();
                sent = index + 1;
                // Drain acks as we go so the socket never overflows.
                if let Err(error) = self.collect_acks(first, &mut results[..sent]) {
                    for result in results.iter_mut().filter(|r| r.is_none()) {
                        *result = Some(Err(error.clone()));
                    }
                    return results.into_iter().map(|r| r.expect("filled")).collect();
                }
            }
        }
        results.into_iter().map(|r| r.unwrap_or(Err(NetlinkError { errno: 0, message: None }))).collect()
    }

    /// Reads acks until every slot of `results` has one.
    fn collect_acks(&self, first: u32, results: &mut [Option<Result<(), NetlinkError>>]) -> Result<(), NetlinkError> {
        while results.iter().any(Option::is_none) {
            for (sequence, payload) in self.receive()? {
                let index = sequence.wrapping_sub(first) as usize;
                if let NetlinkPayload::Error(error) = payload
                    && let Some(slot) = results.get_mut(index)
                {
                    *slot = Some(match error.code {
                        None => Ok(()),
                        Some(code) => Err(error_of(code.get(), &error.header)),
                    });
                }
            }
        }
        Ok(())
    }

    /// One datagram from the socket, split into messages.
    fn receive(&self) -> Result<Vec<(u32, NetlinkPayload<Message>)>, NetlinkError> {
        let mut buffer = self.buffer.borrow_mut();
        buffer.clear();
        self.socket.recv(&mut *buffer, 0).map_err(NetlinkError::io)?;
        parse_datagram(&buffer)
    }

    /// A get request for one object (a link by name or index).
    pub fn get(&self, message: Message) -> Result<Message, NetlinkError> {
        let sequence = self.next_sequence();
        let mut datagram = Vec::new();
        self.frame(message, NLM_F_REQUEST, sequence, &mut datagram);
        self.socket.send(&datagram, 0).map_err(NetlinkError::io)?;
        loop {
            for (reply_sequence, payload) in self.receive()? {
                if reply_sequence != sequence {
                    continue;
                }
                match payload {
                    NetlinkPayload::InnerMessage(message) => return Ok(message),
                    NetlinkPayload::Error(error) => {
                        return Err(match error.code {
                            Some(code) => error_of(code.get(), &error.header),
                            None => NetlinkError { errno: libc::ENOENT, message: None },
                        });
                    }
                    _ => {}
                }
            }
        }
    }

    /// A dump request (`NLM_F_DUMP`): every object the kernel answers with.
    pub fn dump(&self, message: Message) -> Result<Vec<Message>, NetlinkError> {
        let sequence = self.next_sequence();
        let mut datagram = Vec::new();
        self.frame(message, NLM_F_REQUEST | NLM_F_DUMP, sequence, &mut datagram);
        self.socket.send(&datagram, 0).map_err(NetlinkError::io)?;
        let mut out = Vec::new();
        loop {
            for (reply_sequence, payload) in self.receive()? {
                if reply_sequence != sequence {
                    continue;
                }
                match payload {
                    NetlinkPayload::InnerMessage(message) => out.push(message),
                    NetlinkPayload::Done(_) => return Ok(out),
                    NetlinkPayload::Error(error) => match error.code {
                        Some(code) => return Err(error_of(code.get(), &error.header)),
                        None => return Ok(out),
                    },
                    _ => {}
                }
            }
        }
    }
}

/// Splits a datagram into (sequence, payload); a malformed one is an error.
pub fn parse_datagram(buffer: &[u8]) -> Result<Vec<(u32, NetlinkPayload<Message>)>, NetlinkError> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset + NLMSG_HEADER_LEN <= buffer.len() {
        let length = NetlinkBuffer::new_checked(&buffer[offset..]).map_err(NetlinkError::decode)?.length() as usize;
        if length < NLMSG_HEADER_LEN || offset + length > buffer.len() {
            return Err(NetlinkError::decode(DecodeError::from("truncated netlink message")));
        }
        let bytes = &buffer[offset..offset + length];
        match NetlinkMessage::<Message>::deserialize(bytes) {
            Ok(message) => out.push((message.header.sequence_number, message.payload)),
            // A message of a kind we never asked for (or an attribute the
            // crate cannot read) is skipped, not fatal.
            Err(error) => tracing::debug!(%error, "unreadable netlink message skipped"),
        }
        // Messages are padded to 4 bytes.
        offset += (length + 3) & !3;
    }
    Ok(out)
}

/// A socket subscribed to multicast groups, read without blocking.
pub struct Monitor {
    socket: Socket,
    buffer: Vec<u8>,
}

impl fmt::Debug for Monitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Monitor").finish_non_exhaustive()
    }
}

/// `RTNLGRP_LINK` and `RTNLGRP_NEIGH`, the groups notifications come from.
pub const RTNLGRP_LINK: u32 = 1;
pub const RTNLGRP_NEIGH: u32 = 3;

impl Monitor {
    pub fn open(groups: &[u32]) -> io::Result<Monitor> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        for group in groups {
            socket.add_membership(*group)?;
        }
        let _ = socket.set_rx_buf_sz(8 << 20);
        socket.set_non_blocking(true)?;
        Ok(Monitor { socket, buffer: Vec::with_capacity(RECEIVE_BUFFER) })
    }

    /// Everything queued, in order. An overrun (`ENOBUFS`: the kernel
    /// dropped notifications) is reported as `Err` after what was read.
    pub fn drain(&mut self, out: &mut Vec<RouteNetlinkMessage>) -> Result<(), NetlinkError> {
        loop {
            self.buffer.clear();
            match self.socket.recv(&mut self.buffer, 0) {
                Ok(_) => {
                    for (_, payload) in parse_datagram(&self.buffer)? {
                        if let NetlinkPayload::InnerMessage(Message::Route(message)) = payload {
                            out.push(message);
                        }
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(error) => return Err(NetlinkError::io(error)),
            }
        }
    }
}
