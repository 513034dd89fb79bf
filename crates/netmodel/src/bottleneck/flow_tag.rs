//! Which flow a packet belongs to, carried in its id. Link events name
//! only a packet id (the packet itself may be gone), so a driver that wants
//! them charged per flow writes the flow into the id's high bits when the
//! packet enters the bottleneck, and reads it back from each event.

/// Bits below the flow: a packet sequence number, unique within its flow
/// for 2^40 packets (hours at any rate a model link carries).
pub const FLOW_SHIFT: u32 = 40;

/// The flow field's value for a packet of no tracked flow.
const NO_FLOW: u64 = (1 << (64 - FLOW_SHIFT)) - 1;

/// Mask of the sequence bits.
const SEQ_MASK: u64 = (1 << FLOW_SHIFT) - 1;

/// The id of packet `seq` of `flow` (`None`: a packet no flow is charged
/// for). Flow indexes at or above 2^24 - 1 are not representable and are
/// treated as untracked.
pub fn packet_id(flow: Option<usize>, seq: u64) -> u64 {
    let flow = flow
        .and_then(|f| u64::try_from(f).ok())
        .filter(|f| *f < NO_FLOW)
        .unwrap_or(NO_FLOW);
    (flow << FLOW_SHIFT) | (seq & SEQ_MASK)
}

/// The flow a packet id was tagged with, if any.
pub fn flow_of(id: u64) -> Option<usize> {
    let f = id >> FLOW_SHIFT;
    (f != NO_FLOW).then_some(f as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_flow_and_untracked_ones_carry_none() {
        let id = packet_id(Some(7), 12_345);
        assert_eq!((flow_of(id), id & SEQ_MASK), (Some(7), 12_345));
        assert_eq!(flow_of(packet_id(None, 3)), None);
        // A flow index the field cannot hold is untracked, not wrapped
        // onto another flow.
        assert_eq!(flow_of(packet_id(Some(1 << 30), 0)), None);
        // The sequence never spills into the flow.
        assert_eq!(flow_of(packet_id(Some(2), u64::MAX)), Some(2));
    }
}
