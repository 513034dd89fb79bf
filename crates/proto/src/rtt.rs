//! RTT estimation (being built).
