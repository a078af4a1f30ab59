//! The names in scope while resolving: a lookup, a redefinition check and the closing of a block
//! each cost the same whatever the number of names, so resolving stays linear in the file.

use std::collections::HashMap;

/// Visible names with their slots, innermost last, and by name the stack of their bindings.
#[derive(Debug, Default)]
pub(crate) struct Names {
    /// Every binding, in the order made: (name, slot).
    order: Vec<(String, usize)>,
    /// For each visible name, the indexes in `order` of its bindings (the last one is seen).
    by_name: HashMap<String, Vec<usize>>,
}

/// Past this many distinct visible names, an unknown name gets no "did you mean" (the search
/// would cost as much as the names for every unknown one).
const MAX_SUGGESTION_NAMES: usize = 256;

/// A name longer than this gets no "did you mean" (the edit distance costs the product of the
/// lengths).
const MAX_SUGGESTION_LEN: usize = 64;

/// At most this many names are listed in a note.
const MAX_LISTED: usize = 32;

impl Names {
    /// How many bindings are visible: a block's names begin there.
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    /// Binds `name` to `slot`.
    pub(crate) fn bind(&mut self, name: &str, slot: usize) {
        self.by_name
            .entry(name.to_owned())
            .or_default()
            .push(self.order.len());
        self.order.push((name.to_owned(), slot));
    }

    /// The slot `name` is bound to, innermost binding first.
    pub(crate) fn lookup(&self, name: &str) -> Option<usize> {
        let i = *self.by_name.get(name)?.last()?;
        Some(self.order[i].1)
    }

    /// Whether `name` is bound at or after binding `start` (in the current block).
    pub(crate) fn bound_since(&self, name: &str, start: usize) -> bool {
        self.by_name
            .get(name)
            .and_then(|b| b.last())
            .is_some_and(|&i| i >= start)
    }

    /// Forgets every binding from `start` on (a block ends).
    pub(crate) fn truncate(&mut self, start: usize) {
        while self.order.len() > start {
            let Some((name, _)) = self.order.pop() else {
                break;
            };
            if let Some(stack) = self.by_name.get_mut(&name) {
                stack.pop();
                if stack.is_empty() {
                    self.by_name.remove(&name);
                }
            }
        }
    }

    /// A visible name at most two edits from `name` (the closest, then the first in order), when
    /// there are few enough names to search and `name` is short enough.
    pub(crate) fn suggestion(&self, name: &str) -> Option<&str> {
        if self.by_name.len() > MAX_SUGGESTION_NAMES || name.len() > 4 * MAX_SUGGESTION_LEN {
            return None;
        }
        let len = name.chars().count();
        if len > MAX_SUGGESTION_LEN {
            return None;
        }
        self.by_name
            .keys()
            .filter(|n| n.chars().count().abs_diff(len) <= 2)
            .map(|n| (strsim::levenshtein(n, name), n.as_str()))
            .filter(|&(d, n)| d <= 2 && d < n.len().max(name.len()))
            .min()
            .map(|(_, n)| n)
    }

    /// The visible names, sorted, for a note: all of them, or how many there are.
    pub(crate) fn listed(&self) -> Option<String> {
        match self.by_name.len() {
            0 => None,
            n if n > MAX_LISTED => Some(format!("{n} names are defined here")),
            _ => {
                let mut names: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
                names.sort_unstable();
                Some(format!("names defined here: {}", names.join(", ")))
            }
        }
    }
}

#[cfg(test)]
mod tests;
