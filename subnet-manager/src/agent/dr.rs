//! Directed-route hop handling (IBA vol. 1 section 14.2.2): what a node
//! does with a directed-route SMP that arrives on a port, outbound (D = 0:
//! record the return port, step the hop pointer, forward along the initial
//! path, or answer at the end of it) and returning (D = 1: step back along
//! the return path, or hand it to the SM at the start of it). The rule
//! numbers are the compliance statements C14-9 and C14-13.

use super::Agent;
use crate::packet::SmpRepr;
use crate::packet::smp::{MAX_HOPS, SmpRouting};

/// What to do with an SMP after [`Agent::receive`] or [`Agent::originate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Forward the (updated) SMP out of this port.
    Forward {
        port: u8,
    },
    /// This node answered; the response leaves by this port.
    Respond {
        port: u8,
    },
    /// The SMP is for the SM on this node: a returning response at the
    /// start of its path, or a request for the SM's own node (hop count 0)
    /// answered in place.
    ToLocalSm,
    Discard(DrError),
}

/// Why a directed-route SMP was discarded (IBA C14-6, C14-9, C14-13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrError {
    /// Hop count above 63 (C14-6).
    HopCountTooLarge,
    /// An outbound SMP arrived with hop pointer 0: its sender did not step
    /// it (C14-9:1).
    NotStepped,
    /// A CA was asked to forward (C14-9:2, C14-13:2).
    NotASwitch,
    /// The path names a port this node does not have, or port 0.
    NoSuchPort(u8),
    /// The hop pointer is outside the path (C14-9:5, C14-13:5).
    BadHopPointer,
    /// Not a directed-route SMP.
    NotDirectedRoute,
    /// It failed the M_Key check at its destination (IBA 14.2.4.2: no
    /// response).
    MKeyViolation,
}

impl Agent {
    /// Handles a directed-route SMP that arrived on `in_port`, updating its
    /// hop pointer and return path, and answering it when this node is the
    /// end of its route (then `smp` is the response).
    pub fn receive(&mut self, in_port: u8, port_guids: &[u64], smp: &mut SmpRepr) -> Disposition {
        let num_ports = self.num_ports();
        let switch = self.is_switch();
        let SmpRouting::DirectedRoute { returning, hop_pointer, hop_count, initial_path, return_path, .. } =
            &mut smp.routing
        else {
            return self.discard(DrError::NotDirectedRoute);
        };
        if *hop_count > MAX_HOPS {
            return self.discard(DrError::HopCountTooLarge);
        }
        let (count, pointer) = (*hop_count, *hop_pointer);
        // Nothing arrives on a port the node lacks; port 0 only for the
        // node's own SM (a request for this node, hop count 0).
        if in_port > num_ports || (in_port == 0 && count != 0) {
            return self.discard(DrError::NoSuchPort(in_port));
        }
        if !*returning {
            if count != 0 && pointer == 0 {
                return self.discard(DrError::NotStepped);
            }
            if pointer != 0 && pointer < count {
                // C14-9:2: an intermediate hop.
                if !switch {
                    return self.discard(DrError::NotASwitch);
                }
                return_path[usize::from(pointer)] = in_port;
                *hop_pointer = pointer + 1;
                let out = initial_path[usize::from(pointer + 1)];
                if out == 0 || out > num_ports {
                    return self.discard(DrError::NoSuchPort(out));
                }
                return Disposition::Forward { port: out };
            }
            if pointer == count {
                // C14-9:3/4: the end of the path; the response goes back
                // where it came from, the hop pointer left at HopCount
                // (C14-13:1 steps it from HopCount + 1).
                if count != 0 {
                    return_path[usize::from(pointer)] = in_port;
                }
                *returning = true;
                if !self.process(in_port, port_guids, smp) {
                    return self.discard(DrError::MKeyViolation);
                }
                return if count == 0 { Disposition::ToLocalSm } else { Disposition::Respond { port: in_port } };
            }
            return self.discard(DrError::BadHopPointer);
        }
        if (2..=count).contains(&pointer) {
            // C14-13:2: returning through an intermediate switch.
            if !switch {
                return self.discard(DrError::NotASwitch);
            }
            *hop_pointer = pointer - 1;
            let out = return_path[usize::from(pointer - 1)];
            if out == 0 || out > num_ports {
                return self.discard(DrError::NoSuchPort(out));
            }
            return Disposition::Forward { port: out };
        }
        if pointer == 1 {
            // C14-13:3: back at the start of the path, DrSLID permissive.
            *hop_pointer = 0;
            return Disposition::ToLocalSm;
        }
        self.discard(DrError::BadHopPointer)
    }

    /// The first step of an SMP the SM on this node sends (C14-9:1): a hop
    /// count of 0 is answered here; otherwise the hop pointer goes to 1 and
    /// the SMP leaves by the first port of its path. `sm_port` is the port
    /// the SM uses.
    pub fn originate(&mut self, sm_port: u8, port_guids: &[u64], smp: &mut SmpRepr) -> Disposition {
        let num_ports = self.num_ports();
        let SmpRouting::DirectedRoute { hop_pointer, hop_count, initial_path, .. } = &mut smp.routing else {
            return self.discard(DrError::NotDirectedRoute);
        };
        if *hop_count > MAX_HOPS {
            return self.discard(DrError::HopCountTooLarge);
        }
        if *hop_count == 0 {
            return self.receive(sm_port, port_guids, smp);
        }
        *hop_pointer = 1;
        let out = initial_path[1];
        if out == 0 || out > num_ports {
            return self.discard(DrError::NoSuchPort(out));
        }
        Disposition::Forward { port: out }
    }

    fn discard(&mut self, error: DrError) -> Disposition {
        self.counters.discarded += 1;
        Disposition::Discard(error)
    }
}
