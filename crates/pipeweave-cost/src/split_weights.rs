//! The weights a split search balances ([`SplitWeights`]): each piece of a model (the embedding,
//! the head, one layer of each kind) priced by the cost model as a part of the plan would be.

use crate::comm::Links;
use crate::cost::{Builder, PartCosts, mismatch};
use crate::model;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::Plan;
use pipeweave_spec::Spec;

/// What one piece of a model weighs on the rank that holds it: the seconds of its forward and
/// full backward, the activation bytes one micro-batch keeps, its weights (a count of
/// parameters on one GPU, dense and routed experts).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Weight {
    /// Seconds of a lone forward plus a full backward.
    pub seconds: f64,
    /// Activation bytes one micro-batch keeps.
    pub activation_bytes: f64,
    /// Dense weights on one GPU.
    pub dense_params: f64,
    /// Routed-expert weights on one GPU.
    pub expert_params: f64,
}

impl Weight {
    fn of(p: &PartCosts) -> Weight {
        Weight {
            seconds: p.f.cost.duration + p.b.cost.duration,
            activation_bytes: p.activation_bytes,
            dense_params: p.dense_params,
            expert_params: p.expert_params,
        }
    }

    fn minus(self, o: Weight) -> Weight {
        Weight {
            seconds: (self.seconds - o.seconds).max(0.0),
            activation_bytes: (self.activation_bytes - o.activation_bytes).max(0.0),
            dense_params: (self.dense_params - o.dense_params).max(0.0),
            expert_params: (self.expert_params - o.expert_params).max(0.0),
        }
    }
}

/// The weights a split search balances, from the cost model itself: what the first part holds
/// besides its layers (the embedding), what the last holds (the head, multi-token prediction),
/// and one layer of each kind (a dense layer, an MoE layer), each priced as a part of `plan`
/// would be. A part's figures are close to the sum of its pieces' (the passes' communication
/// overlaps a little differently), so a search ranks splits with these and prices its few
/// candidates with a whole [`CostTable`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplitWeights {
    /// The first part with no layer: the embedding.
    pub first: Weight,
    /// The last part with no layer: the output head and the multi-token prediction modules.
    pub last: Weight,
    /// One dense layer (the first `moe.dense_layers` layers of an MoE model, every layer else).
    pub dense: Weight,
    /// One MoE layer (the same as `dense` for a dense model).
    pub moe: Weight,
    /// Layers `[0, dense_layers)` are dense.
    pub dense_layers: u64,
}

impl SplitWeights {
    /// The weights of `spec`'s pieces for `plan`'s placement; fails as [`CostTable::new`] does.
    pub fn of(spec: &Spec, plan: &Plan) -> Result<SplitWeights, Vec<Diagnostic>> {
        let errors = mismatch(spec, plan);
        if !errors.is_empty() {
            return Err(errors);
        }
        let links = Links::of(spec);
        let b = Builder::of(spec, &links);
        let head = model::head(spec);
        let parts = spec.parallelism.layers_per_stage.len().max(1);
        let layers = spec.model.layers;
        let last = parts - 1;
        let mtp: Vec<model::Layer> = (0..spec.model.mtp_depth)
            .map(|k| model::layer(spec, layers + k))
            .collect();
        let price = |q: usize, start: u64, end: u64| {
            let chunks = model::layer_chunks(spec, start, end, 1);
            let mtp: &[model::Layer] = if q == last { &mtp } else { &[] };
            Weight::of(&b.part(q, (start, end), &chunks, mtp, &head, plan, &links))
        };
        // a middle position where there is one, so that neither the embedding nor the head
        // takes part in a layer's difference
        let mid = if parts > 2 { 1 } else { 0 };
        let empty = price(mid, 0, 0);
        let dense_layers = spec
            .model
            .moe
            .map_or(layers, |m| m.dense_layers.min(layers));
        let dense = if dense_layers > 0 {
            price(mid, 0, 1).minus(empty)
        } else {
            Weight::default()
        };
        let moe = if dense_layers < layers {
            price(mid, layers - 1, layers).minus(empty)
        } else {
            dense
        };
        let (first, last_w) = if parts == 1 {
            let both = price(0, 0, 0);
            (both, Weight::default())
        } else {
            (price(0, 0, 0), price(last, layers, layers))
        };
        Ok(SplitWeights {
            first,
            last: last_w,
            dense: if dense_layers > 0 { dense } else { moe },
            moe,
            dense_layers,
        })
    }

    /// The weight of layer `k`.
    pub fn layer(&self, k: u64) -> Weight {
        if k < self.dense_layers {
            self.dense
        } else {
            self.moe
        }
    }
}
