//! The management agent (SMA) over arbitrary SMPs: a switch and a CA agent
//! receive whatever parses, on any port, directed route or not. Never a
//! panic; a response leaves by a port the node has; every answer parses.

#![no_main]

use libfuzzer_sys::fuzz_target;
use subnet_manager::agent::{Agent, Disposition};
use subnet_manager::packet::SmpRepr;
use subnet_manager::topology::NodeKind;

fuzz_target!(|data: &[u8]| {
    let Some((&steer, rest)) = data.split_first() else {
        return;
    };
    let Ok(smp) = SmpRepr::parse_bytes(rest) else {
        return;
    };
    let (mut switch, switch_guids) = Agent::standalone(0x100, NodeKind::Switch, 8, "fuzz switch");
    let (mut ca, ca_guids) = Agent::standalone(0x200, NodeKind::Ca, 2, "fuzz ca");
    for (agent, guids) in [(&mut switch, &switch_guids), (&mut ca, &ca_guids)] {
        let mut request = smp;
        let in_port = steer % (agent.num_ports() + 2);
        let disposition = if steer & 0x80 != 0 {
            agent.originate(in_port, guids, &mut request)
        } else {
            agent.receive(in_port, guids, &mut request)
        };
        if let Disposition::Forward { port } | Disposition::Respond { port } = disposition {
            assert!(port >= 1 && port <= agent.num_ports());
        }
        assert!(SmpRepr::parse_bytes(&request.to_bytes()).is_ok());
        // Processing the same SMP a second time (a retry) is fine too.
        let mut again = smp;
        // (Unless the first one set an M_Key this one does not carry.)
        if agent.process(in_port, guids, &mut again) {
            assert!(again.method.is_response());
        }
    }
});
