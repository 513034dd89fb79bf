//! The two ways across a bottleneck. Everything that keeps one value per
//! direction (links, queue delays, loss counts, a flow's two halves)
//! indexes it with [`Direction::index`], so "down" and "up" mean the same
//! thing in the simulator, the live router and their results.

/// Which way a packet crosses the bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// From the sender (server) side to the receiver (client) side: where
    /// bulk data queues.
    Down,
    /// From the receiver (client) side back: ACKs, echoes, uploads.
    Up,
}

impl Direction {
    /// Both directions in the order every per-direction array uses.
    pub const BOTH: [Direction; 2] = [Direction::Down, Direction::Up];

    /// Position in a per-direction array: down 0, up 1.
    pub fn index(self) -> usize {
        match self {
            Direction::Down => 0,
            Direction::Up => 1,
        }
    }

    /// The way back.
    pub fn opposite(self) -> Direction {
        match self {
            Direction::Down => Direction::Up,
            Direction::Up => Direction::Down,
        }
    }

    /// "down" or "up", as results and reports write it.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Down => "down",
            Direction::Up => "up",
        }
    }
}
