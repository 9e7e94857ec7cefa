//! ICMP messages the router originates: echo replies, time exceeded,
//! destination unreachable (RFC 792, RFC 4443).
