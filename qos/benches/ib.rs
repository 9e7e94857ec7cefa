//! The IB-like switch's per-packet path: parse the 0x88B5 payload (delimiter,
//! LRH, VCRC over the packet), then the engine: credit accounting on the
//! input VL, LFT lookup, SL-to-VL, VOQ, VL arbitration with the downstream
//! credit check, and the credit returned upstream. The downstream grants
//! more credit every 8 packets, as flow-control packets would.
//!
//!     nice -n 5 cargo bench -p qos --bench ib

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataplane::wire::ib::{IbPacketRepr, LrhRepr, NextHeader};
use qos::ib::arbiter::ArbitrationEntry;
use qos::ib::blocks;
use qos::ib::credit::FlowControlUpdate;
use qos::ib::switch::{IbSwitch, LogicalState, PacketDesc, SwitchConfig};
use std::hint::black_box;

const PORTS: usize = 4;
const BATCH: usize = 1024;
const PAYLOAD: usize = 256;

fn frames() -> Vec<Vec<u8>> {
    let payload = [0x5a; PAYLOAD];
    (0..BATCH)
        .map(|i| {
            let lrh = LrhRepr {
                vl: (i % 2) as u8,
                sl: (i % 2) as u8,
                next_header: NextHeader::IbaLocal,
                dlid: 2 + (i % (PORTS - 1)) as u16,
                slid: 1,
                payload_len: PAYLOAD,
            };
            let repr = IbPacketRepr::Data { lrh, payload: &payload };
            let mut frame = vec![0; repr.buffer_len()];
            repr.emit(&mut frame).unwrap();
            frame
        })
        .collect()
}

fn switch() -> IbSwitch {
    let low = [ArbitrationEntry { vl: 0, weight: 4 }, ArbitrationEntry { vl: 1, weight: 4 }];
    let mut switch = IbSwitch::new(&SwitchConfig {
        ports: PORTS,
        operational_vls: 2,
        buffer_blocks: 256,
        flow_control_refresh_ns: u64::MAX,
        vl_arbitration_high: vec![],
        vl_arbitration_low: low.to_vec(),
        high_priority_limit: 255,
    })
    .unwrap();
    for port in 1..PORTS {
        switch.lft.set(port as u16 + 1, port as u8).unwrap();
        let mut table = [0; 16];
        table[1] = 1;
        switch.sl_to_vl.set_table(0, port, table);
    }
    for port in 0..PORTS {
        switch.set_port_state(port, LogicalState::Active);
        for vl in 0..2 {
            switch.flow_control_received(port, FlowControlUpdate { vl, fctbs: 0, fccl: 2000 });
        }
    }
    switch
}

fn ib_switch_path(c: &mut Criterion) {
    let frames = frames();
    let mut switch = switch();
    // Blocks the switch has sent per (port, VL), mirrored to grant credit.
    let mut sent = [[0u16; 2]; PORTS];
    let mut group = c.benchmark_group("ib");
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("parse_lft_sl2vl_credit_arbitrate", |b| {
        b.iter(|| {
            for (handle, frame) in frames.iter().enumerate() {
                let Ok(IbPacketRepr::Data { lrh, .. }) = IbPacketRepr::parse(black_box(frame)) else {
                    panic!("bench frame does not parse");
                };
                let wire_len = (lrh.buffer_len()) as u32;
                let packet = PacketDesc { handle: handle as u32, vl: lrh.vl, sl: lrh.sl, dlid: lrh.dlid, wire_len };
                let qos::ib::switch::Received::Queued { out_port, .. } = switch.receive(0, packet) else {
                    panic!("bench packet not queued");
                };
                let out = usize::from(out_port);
                let transmit = switch.poll_transmit(out, 0).expect("credit granted");
                let vl = usize::from(transmit.vl);
                sent[out][vl] = (sent[out][vl] + blocks(wire_len)) & 0xfff;
                if handle % 8 == 7 {
                    for (port, per_vl) in sent.iter().enumerate().skip(1) {
                        for (vl, &blocks_sent) in per_vl.iter().enumerate() {
                            switch.flow_control_received(
                                port,
                                FlowControlUpdate { vl: vl as u8, fctbs: 0, fccl: (blocks_sent + 1024) & 0xfff },
                            );
                        }
                    }
                }
                black_box(transmit);
            }
        })
    });
    group.finish();
}

criterion_group!(benches, ib_switch_path);
criterion_main!(benches);
