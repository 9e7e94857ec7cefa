//! The switch's data plane: wire formats of every frame a port carries, and
//! the sans-IO forwarding pipeline that turns (frame, ingress port, time) into
//! forwarding decisions.

pub mod io;
pub mod node;
pub mod pipeline;
pub mod wire;
