//! The rounds of the lowering: every rank, in rank order, takes its next entry if it can (an
//! action whose inputs have been scheduled, or a reduction entry, which is always due), and a
//! round that moves no rank (an invalid plan) takes the lowest unfinished rank's next action anyway.
//!
//! They are run event-driven, so that their cost follows the entries and not ranks × rounds (a
//! plan of 65,536 ranks and 8 micro-batches takes some 130,000 rounds in which a handful of ranks
//! move). A round visits, in rank order, the ranks of a set ([`Lowering::active`]): a rank whose
//! next action waits for an input leaves it, parked on that input ([`Lowering::park`]), and comes
//! back when the input is scheduled; so it is visited again from the first turn after that: later
//! in the same round when it comes after the rank that scheduled the input, in the next round
//! otherwise. That is the turn in which the plain round-robin would first succeed with it, since
//! inputs once scheduled stay so and nothing else decides whether an action can go; so both give
//! the same programs, step for step (`lower_plainly` keeps the plain one for the tests that say
//! so). When the set is empty with entries left, every rank waits: the plain round-robin would
//! find a round without progress there too.

use super::{Lowering, NO_WAIT};
use crate::action::Action;

fn due_at(list: &[(usize, u64)], k: usize) -> usize {
    list.get(k).map_or(usize::MAX, |&(i, _)| i)
}

impl Lowering<'_> {
    /// Schedules every action and reduction entry in rounds, visiting only the ranks in
    /// [`Lowering::active`].
    pub(super) fn run(&mut self, programs: &[Vec<Action>], reductions: &[Vec<(usize, u64)>]) {
        // Each rank's next action, its next reduction entry and the position after which that
        // entry is due (usize::MAX when none is left). Locals, not fields: the hot loop keeps
        // them in registers.
        let ranks = programs.len();
        let mut pos = vec![0usize; ranks];
        let mut red = vec![0usize; ranks];
        let mut due: Vec<usize> = reductions.iter().map(|list| due_at(list, 0)).collect();
        let mut left: usize = programs.iter().map(Vec::len).sum::<usize>()
            + reductions.iter().map(Vec::len).sum::<usize>();
        for r in 0..ranks {
            self.active.insert(r);
        }
        // No rank below this one has actions left (for the stuck case).
        let mut lowest = 0;
        while left > 0 {
            let mut at = self.active.next_from(0);
            while let Some(r) = at {
                if due[r] < pos[r] {
                    self.push(r, reductions[r][red[r]].1);
                    red[r] += 1;
                    due[r] = due_at(&reductions[r], red[r]);
                    left -= 1;
                } else if let Some(&a) = programs[r].get(pos[r]) {
                    if self.try_schedule(r, a, pos[r]) {
                        pos[r] += 1;
                        left -= 1;
                    } else {
                        self.park(r, a);
                    }
                } else {
                    self.active.remove(r);
                }
                at = self.active.next_from(r + 1);
            }
            if self.active.is_empty() && left > 0 {
                // Stuck: every rank with entries left waits (an invalid plan). Take the lowest
                // unfinished rank's next action anyway (it cannot be a reduction, which is
                // always due).
                while pos[lowest] >= programs[lowest].len() {
                    lowest += 1;
                }
                let r = lowest;
                self.wait[r] = NO_WAIT;
                self.active.insert(r);
                self.schedule(r, programs[r][pos[r]], pos[r]);
                pos[r] += 1;
                left -= 1;
            }
        }
    }

    /// The same rounds, plainly: every rank takes its turn in every round.
    #[cfg(test)]
    pub(super) fn run_plainly(
        &mut self,
        programs: &[Vec<Action>],
        reductions: &[Vec<(usize, u64)>],
    ) {
        let ranks = programs.len();
        let mut pos = vec![0usize; ranks];
        let mut red = vec![0usize; ranks];
        let mut due: Vec<usize> = reductions.iter().map(|list| due_at(list, 0)).collect();
        let mut left: usize = programs.iter().map(Vec::len).sum::<usize>()
            + reductions.iter().map(Vec::len).sum::<usize>();
        while left > 0 {
            let mut progress = false;
            for r in 0..ranks {
                if due[r] < pos[r] {
                    self.push(r, reductions[r][red[r]].1);
                    red[r] += 1;
                    due[r] = due_at(&reductions[r], red[r]);
                } else if let Some(&a) = programs[r].get(pos[r])
                    && self.try_schedule(r, a, pos[r])
                {
                    pos[r] += 1;
                } else {
                    continue;
                }
                left -= 1;
                progress = true;
            }
            if !progress && let Some(r) = (0..ranks).find(|&r| pos[r] < programs[r].len()) {
                self.schedule(r, programs[r][pos[r]], pos[r]);
                pos[r] += 1;
                left -= 1;
            }
        }
    }
}

/// A set of ranks as bits, with a summary bit for every word of the level below, up to a single
/// word: finding the next member reads a word or two per level (three levels for 65,536 ranks),
/// however many ranks in between are not members.
#[derive(Debug)]
pub(super) struct RankSet {
    /// A bit per rank.
    bits: Vec<u64>,
    /// The summaries: bit k of `upper[0]` is set when word k of `bits` is not zero, bit k of
    /// `upper[l + 1]` when word k of `upper[l]` is; the last is one word. None for 64 ranks or
    /// fewer.
    upper: Vec<Vec<u64>>,
}

impl RankSet {
    pub(super) fn new(ranks: usize) -> RankSet {
        let words = ranks.max(1).div_ceil(64);
        let mut upper = Vec::new();
        let mut below = words;
        while below > 1 {
            below = below.div_ceil(64);
            upper.push(vec![0; below]);
        }
        RankSet {
            bits: vec![0; words],
            upper,
        }
    }

    fn is_empty(&self) -> bool {
        match self.upper.last() {
            Some(top) => top[0] == 0,
            None => self.bits[0] == 0,
        }
    }

    #[inline]
    pub(super) fn insert(&mut self, i: usize) {
        let word = &mut self.bits[i / 64];
        let before = *word;
        *word |= 1 << (i % 64);
        if before == 0 {
            self.mark(i / 64);
        }
    }

    /// Word `w` of the bits is no longer zero: says so in the summaries.
    #[cold]
    fn mark(&mut self, mut w: usize) {
        for level in &mut self.upper {
            let word = &mut level[w / 64];
            let before = *word;
            *word |= 1 << (w % 64);
            if before != 0 {
                break;
            }
            w /= 64;
        }
    }

    #[inline]
    pub(super) fn remove(&mut self, i: usize) {
        let word = &mut self.bits[i / 64];
        *word &= !(1 << (i % 64));
        if *word == 0 {
            self.unmark(i / 64);
        }
    }

    /// Word `w` of the bits has become zero: says so in the summaries.
    #[cold]
    fn unmark(&mut self, mut w: usize) {
        for level in &mut self.upper {
            let word = &mut level[w / 64];
            *word &= !(1 << (w % 64));
            if *word != 0 {
                break;
            }
            w /= 64;
        }
    }

    /// The lowest member at or after `i`.
    #[inline]
    pub(super) fn next_from(&self, i: usize) -> Option<usize> {
        let w = i / 64;
        let bits = self.bits.get(w)? & (!0 << (i % 64));
        if bits != 0 {
            return Some(w * 64 + bits.trailing_zeros() as usize);
        }
        self.next_word_from(w + 1)
    }

    /// The lowest member in word `w` of the bits or after it.
    #[cold]
    fn next_word_from(&self, mut i: usize) -> Option<usize> {
        // Up through the summaries to the first with a member at or after `i`'s place...
        let mut level = 0;
        loop {
            let words = self.upper.get(level)?;
            let w = i / 64;
            let bits = words.get(w)? & (!0 << (i % 64));
            if bits != 0 {
                i = w * 64 + bits.trailing_zeros() as usize;
                break;
            }
            level += 1;
            i = w + 1;
        }
        // ... and down to the lowest member under it.
        while level > 0 {
            level -= 1;
            i = i * 64 + self.upper[level][i].trailing_zeros() as usize;
        }
        Some(i * 64 + self.bits[i].trailing_zeros() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::RankSet;

    #[test]
    fn rank_sets_find_their_members_in_order() {
        for ranks in [1, 63, 64, 65, 4096, 4097, 65_536] {
            let mut set = RankSet::new(ranks);
            assert!(set.is_empty());
            let members: Vec<usize> = (0..ranks).rev().step_by(61).collect();
            for &r in &members {
                set.insert(r);
                set.insert(r);
            }
            let mut sorted = members.clone();
            sorted.sort_unstable();
            let mut found = Vec::new();
            let mut at = set.next_from(0);
            while let Some(r) = at {
                found.push(r);
                at = set.next_from(r + 1);
            }
            assert_eq!(found, sorted, "{ranks} ranks");
            assert_eq!(set.next_from(ranks), None);
            for r in sorted {
                assert_eq!(set.next_from(0), Some(r));
                set.remove(r);
            }
            assert!(set.is_empty());
        }
    }
}
