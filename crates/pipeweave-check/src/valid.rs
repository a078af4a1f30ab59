//! [`ValidPlan`]: a plan the validator accepted, as a type, so that what needs a valid plan (the
//! simulator, the exporters) says so in its signature instead of in a comment.

use pipeweave_plan::Plan;
use std::ops::Deref;

/// A plan [`validate`](crate::validate) accepted: every op on a stage and micro-batch the plan has
/// and on the rank hosting its stage, pairs well formed, each piece of work done exactly once and in
/// order, and no deadlock under blocking point-to-point semantics.
///
/// Only the validator makes one, and it gives no mutable access to its plan (editing could break
/// what was checked), so holding a `ValidPlan` is the proof. It reads as a [`Plan`] through
/// [`Deref`]; [`ValidPlan::into_plan`] gives the plan back to edit (and validate again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidPlan {
    plan: Plan,
}

impl ValidPlan {
    /// Wraps a plan the validator found no problem with; the only constructor.
    pub(crate) fn accepted(plan: Plan) -> ValidPlan {
        ValidPlan { plan }
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// This plan with the layers of each part ([`Plan::with_split`]): the split decides no
    /// validity, so the plan stays vouched for.
    pub fn with_split(self, split: Option<Vec<u64>>) -> ValidPlan {
        ValidPlan {
            plan: self.plan.with_split(split),
        }
    }

    /// This plan with each part's recomputation ([`Plan::with_recompute`]), which decides no
    /// validity either.
    pub fn with_recompute(self, recompute: Option<Vec<String>>) -> ValidPlan {
        ValidPlan {
            plan: self.plan.with_recompute(recompute),
        }
    }

    /// The plan, no longer vouched for (to edit it).
    pub fn into_plan(self) -> Plan {
        self.plan
    }
}

impl Deref for ValidPlan {
    type Target = Plan;

    fn deref(&self) -> &Plan {
        &self.plan
    }
}

impl AsRef<Plan> for ValidPlan {
    fn as_ref(&self) -> &Plan {
        &self.plan
    }
}
