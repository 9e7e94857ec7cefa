//! Conformance of the dataplane's `emit` against an independent decoder:
//! one frame of every wire format is built with our reprs only, written to a
//! pcap file, decoded by tshark (`-T json`), and tshark's fields are checked
//! one by one: addresses, tags, checksums tshark verified itself
//! (`*.checksum.status` 1 = good), VNI, ICMPv6 neighbour discovery, LLDP
//! TLVs, PFC vector and timers.
//!
//! Needs `tshark` (Debian package `tshark`). Without it the test fails under
//! `CI=true` and is skipped otherwise.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use dataplane::wire::icmpv4::{DstUnreachable, TimeExceeded};
use dataplane::wire::lldp::{self, RawTlv, TlvType};
use dataplane::wire::{
    ArpPacket, ArpRepr, ChassisId, Ecn, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, Icmpv4Packet,
    Icmpv4Repr, Icmpv6Packet, Icmpv6Repr, IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, LldpPdu, LldpRepr,
    MacControlPacket, MacControlRepr, PortId, PseudoHeader, UdpPacket, UdpRepr, VXLAN_PORT, VlanTag, VlanTagRepr,
    VxlanPacket, VxlanRepr, arp, mac_control, vlan, vxlan,
};

const HOST_A: EthernetAddress = EthernetAddress([0x02, 0x00, 0x00, 0x00, 0x00, 0x0a]);
const HOST_B: EthernetAddress = EthernetAddress([0x02, 0x00, 0x00, 0x00, 0x00, 0x0b]);
const IP_A: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 10);
const IP_B: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 20);
const IP6_A: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 0, 0xa);
const IP6_B: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 2, 0, 0, 0, 0xb);

// ---------------------------------------------------------------------------
// Frame builders: every header written by the dataplane's own `emit`.

/// An Ethernet frame carrying `payload_len` bytes that `fill` writes.
fn ethernet(dst: EthernetAddress, ethertype: EtherType, payload_len: usize, fill: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let repr = EthernetRepr { dst_addr: dst, src_addr: HOST_A, ethertype };
    let mut frame = vec![0u8; repr.buffer_len() + payload_len];
    let mut view = EthernetFrame::new_unchecked(&mut frame[..]);
    repr.emit(&mut view);
    fill(view.payload_mut());
    frame
}

/// One VLAN tag (after its TPID) followed by `payload_len` bytes.
fn tagged(tag: VlanTagRepr, payload_len: usize, fill: impl FnOnce(&mut [u8])) -> impl FnOnce(&mut [u8]) {
    move |buf: &mut [u8]| {
        tag.emit(&mut VlanTag::new_unchecked(&mut buf[..]));
        fill(&mut buf[vlan::TAG_LEN..vlan::TAG_LEN + payload_len]);
    }
}

fn arp_request() -> ArpRepr {
    ArpRepr {
        operation: arp::Operation::Request,
        sender_hardware_addr: HOST_A,
        sender_protocol_addr: IP_A,
        target_hardware_addr: EthernetAddress::ZERO,
        target_protocol_addr: Ipv4Addr::new(192, 0, 2, 1),
    }
}

fn emit_arp(repr: ArpRepr) -> impl FnOnce(&mut [u8]) {
    move |buf: &mut [u8]| repr.emit(&mut ArpPacket::new_unchecked(buf))
}

fn ipv4_repr(protocol: IpProtocol, payload_len: usize) -> Ipv4Repr {
    Ipv4Repr {
        src_addr: IP_A,
        dst_addr: IP_B,
        protocol,
        payload_len,
        ttl: 64,
        dscp: 0,
        ecn: Ecn::NotEct,
        ident: 0x1c46,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    }
}

/// An IPv4 packet (no options) whose payload `fill` writes.
fn ipv4(repr: Ipv4Repr, fill: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut packet = vec![0u8; repr.buffer_len()];
    let mut view = Ipv4Packet::new_unchecked(&mut packet[..]);
    repr.emit(&mut view);
    fill(view.payload_mut());
    packet
}

/// A UDP datagram with its checksum over `pseudo`.
fn udp(src_port: u16, dst_port: u16, payload: &[u8], pseudo: PseudoHeader) -> Vec<u8> {
    let repr = UdpRepr { src_port, dst_port, payload_len: payload.len() };
    let mut datagram = vec![0u8; repr.buffer_len()];
    datagram[repr.header_len()..].copy_from_slice(payload);
    repr.emit(&mut UdpPacket::new_unchecked(&mut datagram[..]), &pseudo);
    datagram
}

fn v4_pseudo() -> PseudoHeader {
    PseudoHeader::V4 { src_addr: IP_A, dst_addr: IP_B }
}

/// IPv4 with a Router Alert option (RFC 2113), DSCP EF and ECT(0), carrying
/// UDP. `Ipv4Repr::emit` writes a 20-byte header; the option is added through
/// the view and the checksum refilled.
fn ipv4_with_options_udp() -> Vec<u8> {
    const ROUTER_ALERT: [u8; 4] = [0x94, 0x04, 0x00, 0x00];
    let datagram = udp(49152, 5001, b"options", v4_pseudo());
    let repr = Ipv4Repr { dscp: 46, ecn: Ecn::Ect0, ..ipv4_repr(IpProtocol::Udp, datagram.len()) };
    let header_len = repr.header_len() + ROUTER_ALERT.len();
    let mut packet = vec![0u8; header_len + datagram.len()];
    let mut view = Ipv4Packet::new_unchecked(&mut packet[..]);
    repr.emit(&mut view);
    view.set_header_len(header_len);
    view.set_total_len((header_len + datagram.len()) as u16);
    packet[repr.header_len()..header_len].copy_from_slice(&ROUTER_ALERT);
    packet[header_len..].copy_from_slice(&datagram);
    // The checksum covers the options: fill it again now they are in place.
    Ipv4Packet::new_unchecked(&mut packet[..]).fill_checksum();
    packet
}

fn ipv4_frame(packet: Vec<u8>) -> Vec<u8> {
    ethernet(HOST_B, EtherType::Ipv4, packet.len(), |buf| buf.copy_from_slice(&packet))
}

fn icmpv4(repr: Icmpv4Repr<'_>) -> Vec<u8> {
    let mut message = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Icmpv4Packet::new_unchecked(&mut message[..]));
    ipv4(ipv4_repr(IpProtocol::Icmp, message.len()), |buf| buf.copy_from_slice(&message))
}

/// IPv6 with a Hop-by-Hop Options header (one PadN option) before UDP. Our
/// formats walk extension headers but do not build them, so its 8 bytes are
/// written here (RFC 8200 section 4.3).
fn ipv6_hop_by_hop_udp() -> Vec<u8> {
    let pseudo = PseudoHeader::V6 { src_addr: IP6_A, dst_addr: IP6_B };
    let datagram = udp(49153, 5002, b"over ipv6", pseudo);
    let hop_by_hop = [u8::from(IpProtocol::Udp), 0, 1, 4, 0, 0, 0, 0];
    let repr = Ipv6Repr {
        src_addr: IP6_A,
        dst_addr: IP6_B,
        next_header: IpProtocol::HopByHop,
        payload_len: hop_by_hop.len() + datagram.len(),
        hop_limit: 63,
        dscp: 26,
        ecn: Ecn::Ce,
        flow_label: 0x12345,
    };
    let mut packet = vec![0u8; repr.buffer_len()];
    let mut view = Ipv6Packet::new_unchecked(&mut packet[..]);
    repr.emit(&mut view);
    let payload = view.payload_mut();
    payload[..8].copy_from_slice(&hop_by_hop);
    payload[8..].copy_from_slice(&datagram);
    packet
}

/// An ICMPv6 message in an IPv6 packet from `src` to `dst` (hop limit 255,
/// as neighbour discovery requires), in a frame to `dst_mac`.
fn icmpv6_frame(dst_mac: EthernetAddress, src: Ipv6Addr, dst: Ipv6Addr, repr: Icmpv6Repr<'_>) -> Vec<u8> {
    let ip = Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Icmpv6,
        payload_len: repr.buffer_len(),
        hop_limit: 255,
        dscp: 0,
        ecn: Ecn::NotEct,
        flow_label: 0,
    };
    let mut packet = vec![0u8; ip.buffer_len()];
    let mut view = Ipv6Packet::new_unchecked(&mut packet[..]);
    ip.emit(&mut view);
    repr.emit(&mut Icmpv6Packet::new_unchecked(view.payload_mut()), src, dst);
    ethernet(dst_mac, EtherType::Ipv6, packet.len(), |buf| buf.copy_from_slice(&packet))
}

fn vxlan_frame() -> Vec<u8> {
    let inner_arp = arp_request();
    let inner = EthernetRepr { dst_addr: EthernetAddress::BROADCAST, src_addr: HOST_B, ethertype: EtherType::Arp };
    let vxlan_repr = VxlanRepr { vni: 5000 };
    let mut vxlan_payload = vec![0u8; vxlan_repr.buffer_len() + inner.buffer_len() + inner_arp.buffer_len()];
    let mut view = VxlanPacket::new_unchecked(&mut vxlan_payload[..]);
    vxlan_repr.emit(&mut view);
    let mut inner_frame = EthernetFrame::new_unchecked(view.payload_mut());
    inner.emit(&mut inner_frame);
    inner_arp.emit(&mut ArpPacket::new_unchecked(inner_frame.payload_mut()));
    let datagram = udp(vxlan::udp_source_port(0xdead_beef), VXLAN_PORT, &vxlan_payload, v4_pseudo());
    ipv4_frame(ipv4(ipv4_repr(IpProtocol::Udp, datagram.len()), |buf| buf.copy_from_slice(&datagram)))
}

fn lldp_repr() -> LldpRepr {
    LldpRepr {
        chassis_id: ChassisId::MacAddress(HOST_A),
        port_id: PortId::InterfaceName("eth1".into()),
        ttl: 120,
        port_description: Some("to spine1 Ethernet1/1".into()),
        system_name: Some("leaf1".into()),
        other_tlvs: vec![RawTlv { tlv_type: TlvType::SystemDescription, value: b"fabric switch".to_vec() }],
    }
}

fn lldp_frame() -> Vec<u8> {
    let repr = lldp_repr();
    ethernet(lldp::DESTINATION, EtherType::Lldp, repr.buffer_len(), |buf| {
        repr.emit(&mut LldpPdu::new_unchecked(buf)).expect("LLDP repr fits its TLVs")
    })
}

fn mac_control_frame(repr: MacControlRepr) -> Vec<u8> {
    ethernet(mac_control::DESTINATION, EtherType::MacControl, repr.buffer_len(), |buf| {
        repr.emit(&mut MacControlPacket::new_unchecked(buf))
    })
}

// ---------------------------------------------------------------------------
// tshark's decoding, flattened.

/// The fields tshark decoded in one frame, by field name, each name's values
/// in the order tshark wrote them (a name repeats when a header repeats, as
/// in a tunnel or an ICMP error's quote).
struct Decoded {
    fields: BTreeMap<String, Vec<String>>,
}

impl Decoded {
    fn all(&self, name: &str) -> &[String] {
        self.fields.get(name).map_or(&[], Vec::as_slice)
    }
}

/// Reads tshark's `-T json` output in document order. tshark writes a key
/// twice when a header repeats, and `serde_json::Value` would keep only one
/// of them and sort the rest, so the JSON is walked with a visitor instead,
/// which sees every (field, value) pair as written.
fn parse_tshark_json(text: &str) -> Vec<Decoded> {
    use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

    /// Collects the string values under `key` (and under every key inside).
    struct Fields<'a> {
        key: &'a str,
        out: &'a mut BTreeMap<String, Vec<String>>,
    }

    impl<'de> DeserializeSeed<'de> for Fields<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Fields<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("tshark JSON")
        }
        fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<(), E> {
            self.out.entry(self.key.to_owned()).or_default().push(value.to_owned());
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                map.next_value_seed(Fields { key: &key, out: self.out })?;
            }
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while seq.next_element_seed(Fields { key: self.key, out: self.out })?.is_some() {}
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
    }

    /// The top level: an array of packets, each `{"_source": {"layers": ...}}`.
    struct Packets;

    impl<'de> Visitor<'de> for Packets {
        type Value = Vec<Decoded>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an array of packets")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Decoded>, A::Error> {
            let mut packets = Vec::new();
            loop {
                let mut fields = BTreeMap::new();
                if seq.next_element_seed(Fields { key: "", out: &mut fields })?.is_none() {
                    return Ok(packets);
                }
                packets.push(Decoded { fields });
            }
        }
    }

    impl<'de> DeserializeSeed<'de> for Packets {
        type Value = Vec<Decoded>;
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Decoded>, D::Error> {
            deserializer.deserialize_seq(self)
        }
    }

    let mut deserializer = serde_json::Deserializer::from_str(text);
    Packets.deserialize(&mut deserializer).expect("tshark -T json output")
}

/// Collects every mismatch, so that one run shows all of them.
struct Checker<'a> {
    case: &'static str,
    decoded: &'a Decoded,
    failures: &'a mut Vec<String>,
}

impl Checker<'_> {
    /// The field's values, in order, are exactly `expected`.
    fn values(&mut self, field: &str, expected: &[&str]) {
        let actual = self.decoded.all(field);
        if actual != expected {
            self.failures.push(format!("{}: {field} = {actual:?}, expected {expected:?}", self.case));
        }
    }

    /// The field occurs once, with this value.
    fn eq(&mut self, field: &str, expected: &str) {
        self.values(field, &[expected]);
    }
}

fn tshark_available() -> bool {
    let found = Command::new("tshark").arg("--version").output().is_ok_and(|out| out.status.success());
    if !found {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("tshark is not installed (CI=true: a missing prerequisite is a failure)");
        }
        println!("skipped: tshark not installed");
    }
    found
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let file = std::fs::File::create(path).expect("create pcap");
    let mut writer = pcap_file::pcap::PcapWriter::new(file).expect("pcap header");
    for (index, frame) in frames.iter().enumerate() {
        let packet = pcap_file::pcap::PcapPacket::new(Duration::from_millis(index as u64), frame.len() as u32, frame);
        writer.write_packet(&packet).expect("write pcap packet");
    }
}

fn tshark_decode(path: &Path) -> Vec<Decoded> {
    let output = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(path)
        .args(["-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE"])
        .args(["-T", "json"])
        .output()
        .expect("run tshark");
    assert!(output.status.success(), "tshark failed: {}", String::from_utf8_lossy(&output.stderr));
    parse_tshark_json(&String::from_utf8_lossy(&output.stdout))
}

type Check = fn(&mut Checker<'_>);

#[test]
fn tshark_decodes_every_emitted_format_as_we_meant_it() {
    if !tshark_available() {
        return;
    }
    let udp_quote = ipv4(ipv4_repr(IpProtocol::Udp, 8 + 4), |buf| {
        buf.copy_from_slice(&udp(40000, 33434, b"trcr", v4_pseudo()));
    });
    let echo_quote = icmpv4(Icmpv4Repr::EchoRequest { ident: 0x0b0b, seq_no: 9, data: b"abcdefgh" });

    let cases: Vec<(&'static str, Vec<u8>, Check)> = vec![
        ("ethernet", ethernet(HOST_B, EtherType::LocalExperimental, 46, |buf| buf.fill(0x5a)), |c| {
            c.eq("eth.dst", "02:00:00:00:00:0b");
            c.eq("eth.src", "02:00:00:00:00:0a");
            c.eq("eth.type", "0x88b5");
            c.eq("frame.protocols", "eth:ethertype:data");
        }),
        (
            "single 802.1Q tag, ARP request",
            ethernet(
                EthernetAddress::BROADCAST,
                EtherType::Vlan,
                vlan::TAG_LEN + arp::PACKET_LEN,
                tagged(
                    VlanTagRepr { pcp: 5, dei: false, vid: 100, ethertype: EtherType::Arp },
                    arp::PACKET_LEN,
                    emit_arp(arp_request()),
                ),
            ),
            |c| {
                c.eq("frame.protocols", "eth:ethertype:vlan:ethertype:arp");
                c.eq("eth.type", "0x8100");
                c.eq("vlan.id", "100");
                c.eq("vlan.priority", "5");
                c.eq("vlan.dei", "0");
                c.eq("vlan.etype", "0x0806");
                c.eq("arp.opcode", "1");
                c.eq("arp.hw.type", "1");
                c.eq("arp.proto.type", "0x0800");
                c.eq("arp.src.hw_mac", "02:00:00:00:00:0a");
                c.eq("arp.src.proto_ipv4", "192.0.2.10");
                c.eq("arp.dst.hw_mac", "00:00:00:00:00:00");
                c.eq("arp.dst.proto_ipv4", "192.0.2.1");
            },
        ),
        (
            "double tag (802.1ad S-tag, 802.1Q C-tag), IPv4/UDP",
            {
                let packet = ipv4(ipv4_repr(IpProtocol::Udp, 8 + 3), |buf| {
                    buf.copy_from_slice(&udp(1000, 2000, b"qnq", v4_pseudo()));
                });
                let inner = VlanTagRepr { pcp: 1, dei: true, vid: 20, ethertype: EtherType::Ipv4 };
                let outer = VlanTagRepr { pcp: 3, dei: false, vid: 10, ethertype: EtherType::Vlan };
                let len = packet.len();
                ethernet(
                    HOST_B,
                    EtherType::QinQ,
                    2 * vlan::TAG_LEN + len,
                    tagged(outer, vlan::TAG_LEN + len, tagged(inner, len, move |buf| buf.copy_from_slice(&packet))),
                )
            },
            |c| {
                c.eq("frame.protocols", "eth:ethertype:ieee8021ad:ethertype:vlan:ethertype:ip:udp:data");
                c.eq("eth.type", "0x88a8");
                c.eq("ieee8021ad.id", "10");
                c.eq("ieee8021ad.priority", "3");
                c.eq("ieee8021ad.dei", "0");
                c.eq("vlan.id", "20");
                c.eq("vlan.priority", "1");
                c.eq("vlan.dei", "1");
                c.eq("vlan.etype", "0x0800");
                c.eq("ip.checksum.status", "1");
                c.eq("udp.checksum.status", "1");
                c.eq("udp.srcport", "1000");
                c.eq("udp.dstport", "2000");
            },
        ),
        ("ARP reply", ethernet(HOST_B, EtherType::Arp, arp::PACKET_LEN, emit_arp(arp_request().reply(HOST_B))), |c| {
            c.eq("frame.protocols", "eth:ethertype:arp");
            c.eq("arp.opcode", "2");
            c.eq("arp.src.hw_mac", "02:00:00:00:00:0b");
            c.eq("arp.src.proto_ipv4", "192.0.2.1");
            c.eq("arp.dst.hw_mac", "02:00:00:00:00:0a");
            c.eq("arp.dst.proto_ipv4", "192.0.2.10");
        }),
        ("IPv4 with options, DSCP/ECN, UDP", ipv4_frame(ipv4_with_options_udp()), |c| {
            c.eq("frame.protocols", "eth:ethertype:ip:udp:data");
            c.eq("ip.version", "4");
            c.eq("ip.hdr_len", "24");
            c.eq("ip.len", "39");
            c.eq("ip.opt.type", "148");
            c.eq("ip.opt.len", "4");
            c.eq("ip.dsfield.dscp", "46");
            c.eq("ip.dsfield.ecn", "2");
            c.eq("ip.id", "0x1c46");
            c.eq("ip.flags.df", "1");
            c.eq("ip.flags.mf", "0");
            c.eq("ip.ttl", "64");
            c.eq("ip.proto", "17");
            c.eq("ip.src", "192.0.2.10");
            c.eq("ip.dst", "198.51.100.20");
            c.eq("ip.checksum.status", "1");
            c.eq("udp.srcport", "49152");
            c.eq("udp.dstport", "5001");
            c.eq("udp.length", "15");
            c.eq("udp.checksum.status", "1");
        }),
        (
            "IPv6 with a Hop-by-Hop header, UDP",
            {
                let packet = ipv6_hop_by_hop_udp();
                ethernet(HOST_B, EtherType::Ipv6, packet.len(), |buf| buf.copy_from_slice(&packet))
            },
            |c| {
                c.eq("frame.protocols", "eth:ethertype:ipv6:ipv6.hopopts:udp:data");
                c.eq("ipv6.version", "6");
                c.eq("ipv6.tclass.dscp", "26");
                c.eq("ipv6.tclass.ecn", "3");
                c.eq("ipv6.flow", "0x012345");
                c.eq("ipv6.plen", "25");
                c.eq("ipv6.nxt", "0");
                c.eq("ipv6.hlim", "63");
                c.eq("ipv6.src", "2001:db8:0:1::a");
                c.eq("ipv6.dst", "2001:db8:0:2::b");
                c.eq("ipv6.hopopts.nxt", "17");
                c.eq("ipv6.hopopts.len_oct", "8");
                c.eq("udp.srcport", "49153");
                c.eq("udp.dstport", "5002");
                c.eq("udp.checksum.status", "1");
            },
        ),
        (
            "ICMPv4 echo request",
            ipv4_frame(icmpv4(Icmpv4Repr::EchoRequest { ident: 0x1234, seq_no: 7, data: b"0123456789abcdef" })),
            |c| {
                c.eq("frame.protocols", "eth:ethertype:ip:icmp:data");
                c.eq("ip.checksum.status", "1");
                c.eq("icmp.type", "8");
                c.eq("icmp.code", "0");
                c.eq("icmp.checksum.status", "1");
                c.eq("icmp.ident", "4660");
                c.eq("icmp.seq", "7");
                c.eq("data.data", "30:31:32:33:34:35:36:37:38:39:61:62:63:64:65:66");
            },
        ),
        (
            "ICMPv4 TTL exceeded quoting an echo request",
            ipv4_frame(icmpv4(Icmpv4Repr::TimeExceeded {
                reason: TimeExceeded::TtlExpired,
                invoking_packet: &echo_quote[..28],
            })),
            |c| {
                c.eq("frame.protocols", "eth:ethertype:ip:icmp:ip:icmp");
                c.values("icmp.type", &["11", "8"]);
                c.values("icmp.code", &["0", "0"]);
                c.values("ip.checksum.status", &["1", "1"]);
                c.values("icmp.ident", &["2827"]);
                // tshark checks the outer message's checksum; the quote is cut
                // after 8 bytes, so the inner one cannot be verified.
                c.values("icmp.checksum.status", &["1", "2"]);
            },
        ),
        (
            "ICMPv4 port unreachable quoting a UDP datagram",
            ipv4_frame(icmpv4(Icmpv4Repr::DstUnreachable {
                reason: DstUnreachable::PortUnreachable,
                next_hop_mtu: 0,
                invoking_packet: &udp_quote,
            })),
            |c| {
                c.eq("frame.protocols", "eth:ethertype:ip:icmp:ip:udp:data");
                c.eq("icmp.type", "3");
                c.eq("icmp.code", "3");
                c.eq("icmp.checksum.status", "1");
                c.values("ip.checksum.status", &["1", "1"]);
                c.eq("udp.srcport", "40000");
                c.eq("udp.dstport", "33434");
            },
        ),
        (
            "ICMPv6 echo request",
            icmpv6_frame(HOST_B, IP6_A, IP6_B, Icmpv6Repr::EchoRequest { ident: 0x4242, seq_no: 3, data: b"ping6" }),
            |c| {
                c.eq("frame.protocols", "eth:ethertype:ipv6:icmpv6:data");
                c.eq("ipv6.nxt", "58");
                c.eq("icmpv6.type", "128");
                c.eq("icmpv6.code", "0");
                c.eq("icmpv6.checksum.status", "1");
                c.eq("icmpv6.echo.identifier", "0x4242");
                c.eq("icmpv6.echo.sequence_number", "3");
            },
        ),
        (
            "ICMPv6 neighbour solicitation",
            icmpv6_frame(
                EthernetAddress([0x33, 0x33, 0xff, 0x00, 0x00, 0x0b]),
                IP6_A,
                Ipv6Addr::new(0xff02, 0, 0, 0, 0, 1, 0xff00, 0x000b),
                Icmpv6Repr::NeighborSolicit { target_addr: IP6_B, source_lladdr: Some(HOST_A) },
            ),
            |c| {
                c.eq("frame.protocols", "eth:ethertype:ipv6:icmpv6");
                c.eq("eth.dst", "33:33:ff:00:00:0b");
                c.eq("ipv6.dst", "ff02::1:ff00:b");
                c.eq("ipv6.hlim", "255");
                c.eq("icmpv6.type", "135");
                c.eq("icmpv6.code", "0");
                c.eq("icmpv6.checksum.status", "1");
                c.eq("icmpv6.nd.ns.target_address", "2001:db8:0:2::b");
                c.eq("icmpv6.opt.type", "1");
                c.eq("icmpv6.opt.length", "1");
                c.eq("icmpv6.opt.src_linkaddr", "02:00:00:00:00:0a");
            },
        ),
        (
            "ICMPv6 neighbour advertisement",
            icmpv6_frame(
                HOST_B,
                IP6_B,
                IP6_A,
                Icmpv6Repr::NeighborAdvert {
                    router_flag: true,
                    solicited_flag: true,
                    override_flag: false,
                    target_addr: IP6_B,
                    target_lladdr: Some(HOST_B),
                },
            ),
            |c| {
                c.eq("frame.protocols", "eth:ethertype:ipv6:icmpv6");
                c.eq("icmpv6.type", "136");
                c.eq("icmpv6.checksum.status", "1");
                c.eq("icmpv6.nd.na.flag.r", "1");
                c.eq("icmpv6.nd.na.flag.s", "1");
                c.eq("icmpv6.nd.na.flag.o", "0");
                c.eq("icmpv6.nd.na.target_address", "2001:db8:0:2::b");
                c.eq("icmpv6.opt.type", "2");
                c.eq("icmpv6.opt.target_linkaddr", "02:00:00:00:00:0b");
            },
        ),
        ("VXLAN (IPv4/UDP) carrying an ARP request", vxlan_frame(), |c| {
            c.eq("frame.protocols", "eth:ethertype:ip:udp:vxlan:eth:ethertype:arp");
            c.eq("udp.dstport", "4789");
            c.eq("udp.checksum.status", "1");
            c.eq("ip.checksum.status", "1");
            c.eq("vxlan.flag_i", "1");
            c.eq("vxlan.vni", "5000");
            c.values("eth.dst", &["02:00:00:00:00:0b", "ff:ff:ff:ff:ff:ff"]);
            c.values("eth.src", &["02:00:00:00:00:0a", "02:00:00:00:00:0b"]);
            c.eq("arp.src.proto_ipv4", "192.0.2.10");
        }),
        ("LLDP", lldp_frame(), |c| {
            c.eq("frame.protocols", "eth:ethertype:lldp");
            c.eq("eth.dst", "01:80:c2:00:00:0e");
            c.values("lldp.tlv.type", &["1", "2", "3", "4", "5", "6", "0"]);
            c.eq("lldp.chassis.subtype", "4");
            c.eq("lldp.chassis.id.mac", "02:00:00:00:00:0a");
            c.eq("lldp.port.subtype", "5");
            c.eq("lldp.port.id", "eth1");
            c.eq("lldp.time_to_live", "120");
            c.eq("lldp.port.desc", "to spine1 Ethernet1/1");
            c.eq("lldp.tlv.system.name", "leaf1");
            c.eq("lldp.tlv.system.desc", "fabric switch");
        }),
        ("802.3x PAUSE", mac_control_frame(MacControlRepr::Pause { quanta: 0xffff }), |c| {
            c.eq("frame.protocols", "eth:ethertype:macc");
            c.eq("eth.dst", "01:80:c2:00:00:01");
            c.eq("eth.type", "0x8808");
            c.eq("macc.opcode", "0x0001");
            c.eq("macc.pause_time", "65535");
        }),
        (
            "802.1Qbb PFC",
            mac_control_frame(MacControlRepr::PriorityFlowControl {
                class_enable: 0b1000_1001,
                quanta: [100, 0, 0, 3000, 0, 0, 0, 65535],
            }),
            |c| {
                c.eq("frame.protocols", "eth:ethertype:macc");
                c.eq("eth.dst", "01:80:c2:00:00:01");
                c.eq("macc.opcode", "0x0101");
                c.eq("macc.cbfc.enbv", "0x0089");
                for (class, enabled, time) in
                    [(0, 1, 100), (1, 0, 0), (2, 0, 0), (3, 1, 3000), (4, 0, 0), (5, 0, 0), (6, 0, 0), (7, 1, 65535)]
                {
                    c.eq(&format!("macc.cbfc.enbv.c{class}"), &enabled.to_string());
                    c.eq(&format!("macc.cbfc.pause_time.c{class}"), &time.to_string());
                }
            },
        ),
    ];

    // Our own parsers must agree with what we emitted before tshark is asked.
    for (name, frame, _) in &cases {
        assert!(dataplane::wire::vlan::L2Header::parse(frame).is_ok(), "{name}: our L2 parser rejects it");
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("every-format.pcap");
    let frames: Vec<Vec<u8>> = cases.iter().map(|(_, frame, _)| frame.clone()).collect();
    write_pcap(&path, &frames);
    let decoded = tshark_decode(&path);
    assert_eq!(decoded.len(), cases.len(), "tshark read every frame");

    let mut failures = Vec::new();
    for ((case, _, check), decoded) in cases.iter().zip(&decoded) {
        let mut checker = Checker { case, decoded, failures: &mut failures };
        if !decoded.all("_ws.malformed").is_empty() || !decoded.all("_ws.malformed.expert").is_empty() {
            checker.failures.push(format!("{case}: tshark calls the frame malformed"));
        }
        check(&mut checker);
    }
    assert!(failures.is_empty(), "tshark disagrees with our emit:\n{}", failures.join("\n"));
}
