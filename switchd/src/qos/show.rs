//! `show` of the traffic manager, in SONiC's words.
