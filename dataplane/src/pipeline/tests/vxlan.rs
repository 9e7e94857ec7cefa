//! VXLAN encapsulation, decapsulation, flood lists and split horizon.
