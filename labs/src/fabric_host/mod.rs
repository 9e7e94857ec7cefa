//! `fabric-host`, the lab host program: what runs on a lab host's `eth1`
//! beside (or instead of) the kernel's stack.
//!
//! * [`ib`]: an HCA-like endpoint of the IB-like plane: the CA's subnet
//!   management agent (it answers SMPs and takes the LID an SM gives it),
//!   data packets to a DLID sent only as credits allow, an ibping-like
//!   echo, a paced sender and a (possibly slow) receiver.

pub mod ib;
