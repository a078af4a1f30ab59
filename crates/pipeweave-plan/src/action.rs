//! Compute actions: F, B, I, W on one stage and micro-batch, and overlapped F&B pairs (their cell
//! text, and `Display`, in `cell.rs`).

/// The kind of a compute action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Forward.
    F,
    /// Full backward (input and weight gradients together).
    B,
    /// Backward for the inputs only; its weight half is a later [`Kind::W`].
    I,
    /// Backward for the weights, after the [`Kind::I`] of the same stage and micro-batch.
    W,
}

impl Kind {
    /// The kind's letter in cells (`F`, `B`, `I`, `W`).
    #[inline]
    pub fn letter(self) -> char {
        match self {
            Kind::F => 'F',
            Kind::B => 'B',
            Kind::I => 'I',
            Kind::W => 'W',
        }
    }

    /// The kind a cell's letter names.
    pub fn from_letter(c: char) -> Option<Kind> {
        match c {
            'F' => Some(Kind::F),
            'B' => Some(Kind::B),
            'I' => Some(Kind::I),
            'W' => Some(Kind::W),
            _ => None,
        }
    }

    /// B and I compute the input gradient that the previous stage waits for.
    #[inline]
    pub fn is_input_backward(self) -> bool {
        matches!(self, Kind::B | Kind::I)
    }
}

/// One compute operation: a kind on a global stage for a global micro-batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Op {
    /// The global stage (pipeline j's position q is stage j·S + q).
    pub stage: u32,
    /// What it computes.
    pub kind: Kind,
    /// The global micro-batch.
    pub mb: u32,
}

impl Op {
    /// The `kind` op of `stage` for micro-batch `mb`.
    #[inline]
    pub fn new(stage: u32, kind: Kind, mb: u32) -> Op {
        Op { stage, kind, mb }
    }
}

/// One entry of a rank's program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A single compute operation.
    One(Op),
    /// A forward and a backward (B or I) of other micro-batches started together and overlapped,
    /// as DualPipe's F&B: the pair starts once the inputs of both halves have arrived.
    Pair {
        /// The forward.
        f: Op,
        /// The backward (B or I).
        b: Op,
    },
}

impl Action {
    /// The operations of this action, forward first for a pair.
    #[inline]
    pub fn ops(&self) -> Ops {
        match *self {
            Action::One(op) => Ops([Some(op), None]),
            Action::Pair { f, b } => Ops([Some(f), Some(b)]),
        }
    }

    /// Whether this is an overlapped pair.
    #[inline]
    pub fn is_pair(&self) -> bool {
        matches!(self, Action::Pair { .. })
    }
}

/// The one or two operations of an action, in order (a plain array: this is on every hot path).
#[derive(Debug, Clone)]
pub struct Ops([Option<Op>; 2]);

impl Iterator for Ops {
    type Item = Op;

    #[inline]
    fn next(&mut self) -> Option<Op> {
        match self.0[0].take() {
            Some(op) => Some(op),
            None => self.0[1].take(),
        }
    }
}

impl From<Op> for Action {
    fn from(op: Op) -> Action {
        Action::One(op)
    }
}
