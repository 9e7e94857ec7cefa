//! The lab layer: containerlab topologies and their runner, `fabric-host`
//! (the lab host program) and the virtual-time simulator.
