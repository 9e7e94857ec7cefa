use super::*;

const PAYLOAD: usize = 5000;

fn ipv4_header(protocol: u8, payload_len: usize, id: u16) -> Vec<u8> {
    let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, protocol, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2];
    ip[2..4].copy_from_slice(&((20 + payload_len) as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    let sum = checksum::checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    ip
}

fn ipv6_header(protocol: u8, payload_len: usize) -> Vec<u8> {
    let mut ip = vec![0x60, 0, 0, 0, 0, 0, protocol, 64];
    ip[4..6].copy_from_slice(&(payload_len as u16).to_be_bytes());
    ip.extend(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).octets());
    ip.extend(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2).octets());
    ip
}

/// A TCP segment (12 bytes of options: what Linux sends with timestamps)
/// carrying `payload`, checksum left partial as a TSO sender leaves it.
fn tcp(payload: &[u8], flags: u8) -> Vec<u8> {
    let mut tcp = vec![0x30, 0x39, 0x14, 0x51];
    tcp.extend(0xfffff000u32.to_be_bytes()); // near the wrap, on purpose
    tcp.extend(7u32.to_be_bytes());
    tcp.extend([0x80, flags, 0x01, 0xf5, 0x12, 0x34, 0, 0]);
    tcp.extend([1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
    tcp.extend(payload);
    tcp
}

fn payload() -> Vec<u8> {
    (0..PAYLOAD).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn ethernet(ethertype: u16, tagged: bool) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
    if tagged {
        f.extend([0x81, 0x00, 0x00, 0x0a]);
    }
    f.extend(ethertype.to_be_bytes());
    f
}

fn plain_v4(tagged: bool) -> Vec<u8> {
    let segment = tcp(&payload(), TCP_PSH | TCP_FIN | TCP_CWR | 0x10);
    let mut f = ethernet(ETHERTYPE_IPV4, tagged);
    f.extend(ipv4_header(PROTO_TCP, segment.len(), 0xfffe));
    f.extend(segment);
    f
}

fn plain_v6() -> Vec<u8> {
    let segment = tcp(&payload(), TCP_PSH | 0x10);
    let mut f = ethernet(ETHERTYPE_IPV6, false);
    f.extend(ipv6_header(PROTO_TCP, segment.len()));
    f.extend(segment);
    f
}

/// TCP over IPv4 inside VXLAN over IPv4 or IPv6.
fn vxlan(outer_v6: bool) -> Vec<u8> {
    let segment = tcp(&payload(), TCP_PSH | 0x10);
    let mut inner = ethernet(ETHERTYPE_IPV4, false);
    inner.extend(ipv4_header(PROTO_TCP, segment.len(), 100));
    inner.extend(segment);
    let mut udp = vec![0xc0, 0x00];
    udp.extend(VXLAN_PORT.to_be_bytes());
    udp.extend(((8 + 8 + inner.len()) as u16).to_be_bytes());
    udp.extend([0, 0]);
    udp.extend([0x08, 0, 0, 0, 0, 0, 0x64, 0]);
    udp.extend(inner);
    let mut f = ethernet(if outer_v6 { ETHERTYPE_IPV6 } else { ETHERTYPE_IPV4 }, false);
    if outer_v6 {
        f.extend(ipv6_header(PROTO_UDP, udp.len()));
    } else {
        f.extend(ipv4_header(PROTO_UDP, udp.len(), 9));
    }
    f.extend(udp);
    f
}

fn segment_all(frame: &[u8], mtu: usize) -> Vec<Vec<u8>> {
    let mut segmenter = Segmenter::new();
    segmenter.buffer()[..frame.len()].copy_from_slice(frame);
    segmenter.load(frame.len(), mtu).expect("segmentable");
    let expected = segmenter.remaining();
    let mut out = vec![0u8; 16384];
    let mut segments = Vec::new();
    while let Some(len) = segmenter.next_segment(&mut out) {
        segments.push(out[..len].to_vec());
    }
    assert_eq!(segments.len(), expected);
    assert_eq!(segmenter.remaining(), 0);
    segments
}

/// Checks a segment the way a receiving host would and returns (seq, flags,
/// payload, ipv4 id) of its TCP part.
fn check(segment: &[u8], mtu: usize) -> (u32, u8, Vec<u8>, Option<u16>) {
    let layout = parse(segment).expect("a segment parses as the frame did");
    assert!(segment.len() - layout.outer.at <= mtu, "segment over the MTU");
    for ip in [layout.outer, layout.inner] {
        if ip.v4 {
            assert_eq!(checksum::checksum(&segment[ip.at..ip.at + ip.len]), 0, "IPv4 header checksum");
        }
    }
    let tcp = layout.tcp;
    let tcp_len = segment.len() - tcp;
    assert_eq!(
        checksum::finish(pseudo_header(segment, layout.inner, PROTO_TCP, tcp_len) + checksum::sum(&segment[tcp..])),
        0,
        "TCP checksum"
    );
    if let Some(udp) = layout.udp {
        let udp_len = segment.len() - udp;
        assert_eq!(usize::from(be16(segment, udp + 4).unwrap()), udp_len);
        if !layout.outer.v4 {
            assert_eq!(
                checksum::finish(
                    pseudo_header(segment, layout.outer, PROTO_UDP, udp_len) + checksum::sum(&segment[udp..])
                ),
                0,
                "outer UDP checksum over IPv6"
            );
        }
    }
    let seq = u32::from_be_bytes(segment[tcp + 4..tcp + 8].try_into().unwrap());
    let id = layout.inner.v4.then(|| be16(segment, layout.inner.at + 4).unwrap());
    (seq, segment[tcp + TCP_FLAGS], segment[layout.payload..].to_vec(), id)
}

fn check_all(frame: &[u8], mtu: usize) -> Vec<(u32, u8, Vec<u8>, Option<u16>)> {
    let segments = segment_all(frame, mtu);
    assert!(segments.len() > 1);
    let checked: Vec<_> = segments.iter().map(|s| check(s, mtu)).collect();
    let joined: Vec<u8> = checked.iter().flat_map(|(_, _, p, _)| p.clone()).collect();
    assert_eq!(joined, payload(), "the payload, in order, once");
    let mut seq = 0xfffff000u32;
    for (got, _, p, _) in &checked {
        assert_eq!(*got, seq);
        seq = seq.wrapping_add(p.len() as u32);
    }
    checked
}

#[test]
fn tcp_over_ipv4_is_cut_to_the_mtu_with_flags_and_ids_as_linux_does() {
    for tagged in [false, true] {
        let checked = check_all(&plain_v4(tagged), 1500);
        // 1500 - 20 (IPv4) - 32 (TCP with options) = 1448 per segment.
        assert_eq!(checked.len(), PAYLOAD.div_ceil(1448));
        assert_eq!(checked[0].2.len(), 1448);
        let last = checked.len() - 1;
        for (i, (_, flags, _, id)) in checked.iter().enumerate() {
            assert_eq!(flags & (TCP_FIN | TCP_PSH) != 0, i == last, "FIN/PSH on the last only");
            assert_eq!(flags & TCP_CWR != 0, i == 0, "CWR on the first only");
            assert_eq!(flags & 0x10, 0x10, "ACK kept");
            assert_eq!(*id, Some(0xfffeu16.wrapping_add(i as u16)));
        }
    }
}

#[test]
fn tcp_over_ipv6_is_cut_to_the_mtu() {
    let checked = check_all(&plain_v6(), 1280);
    assert_eq!(checked[0].2.len(), 1280 - 40 - 32);
}

#[test]
fn tcp_in_vxlan_is_cut_so_the_outer_packet_fits() {
    for outer_v6 in [false, true] {
        let checked = check_all(&vxlan(outer_v6), 1500);
        let outer = if outer_v6 { 40 } else { 20 };
        assert_eq!(checked[0].2.len(), 1500 - outer - 8 - 8 - 14 - 20 - 32, "outer v6 {outer_v6}");
        assert_eq!(checked[1].3, Some(101), "inner IPv4 IDs count up");
    }
}

#[test]
fn what_cannot_be_cut_is_refused() {
    let mut segmenter = Segmenter::new();
    let mut udp = ethernet(ETHERTYPE_IPV4, false);
    udp.extend(ipv4_header(PROTO_UDP, 8 + 3000, 1));
    udp.extend([0, 1, 0, 2]);
    udp.extend((3008u16).to_be_bytes());
    udp.extend([0, 0]);
    udp.extend(vec![0; 3000]);
    segmenter.buffer()[..udp.len()].copy_from_slice(&udp);
    assert_eq!(segmenter.load(udp.len(), 1500), Err(Unsegmentable::NotTcp));
    let mut lying = plain_v4(false);
    lying[16..18].copy_from_slice(&1500u16.to_be_bytes());
    segmenter.buffer()[..lying.len()].copy_from_slice(&lying);
    assert_eq!(segmenter.load(lying.len(), 1500), Err(Unsegmentable::Malformed));
    let frame = plain_v4(false);
    segmenter.buffer()[..frame.len()].copy_from_slice(&frame);
    assert_eq!(segmenter.load(frame.len(), 52), Err(Unsegmentable::HeadersTooLong));
    assert_eq!(segmenter.remaining(), 0);
}

#[test]
fn a_frame_within_the_mtu_needs_no_cutting_whatever_its_protocol() {
    let mut udp = ethernet(ETHERTYPE_IPV4, true);
    udp.extend(ipv4_header(PROTO_UDP, 8992, 1));
    udp.resize(udp.len() + 8992, 0);
    assert!(fits_mtu(&udp, 9100));
    assert!(!fits_mtu(&udp, 1500));
    assert!(!fits_mtu(&udp[..10], 9100), "no EtherType: not a frame");
}

#[test]
fn a_segment_resumes_where_the_last_call_stopped() {
    let frame = plain_v4(false);
    let all = segment_all(&frame, 1500);
    let mut segmenter = Segmenter::new();
    segmenter.buffer()[..frame.len()].copy_from_slice(&frame);
    segmenter.load(frame.len(), 1500).unwrap();
    let mut small = vec![0u8; 100];
    assert_eq!(segmenter.next_segment(&mut small), None, "too small a slot writes nothing");
    let mut out = vec![0u8; 2048];
    let mut again = Vec::new();
    while let Some(len) = segmenter.next_segment(&mut out) {
        again.push(out[..len].to_vec());
    }
    assert_eq!(again, all);
}

proptest::proptest! {
    #[test]
    fn arbitrary_frames_never_panic(frame in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400), mtu in 0usize..2000) {
        let mut segmenter = Segmenter::new();
        segmenter.buffer()[..frame.len()].copy_from_slice(&frame);
        if segmenter.load(frame.len(), mtu).is_ok() {
            let mut out = vec![0u8; 4096];
            while segmenter.next_segment(&mut out).is_some() {}
        }
    }

    #[test]
    fn cut_frames_never_panic(cut in 0usize..5100) {
        let frame = plain_v4(true);
        let short = &frame[..cut.min(frame.len())];
        let mut segmenter = Segmenter::new();
        segmenter.buffer()[..short.len()].copy_from_slice(short);
        if segmenter.load(short.len(), 1500).is_ok() {
            let mut out = vec![0u8; 4096];
            while segmenter.next_segment(&mut out).is_some() {}
        }
    }
}
