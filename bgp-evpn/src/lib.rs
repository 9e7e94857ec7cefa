//! BGP speaker.
