//! A plugin's replies read and checked, wherever the plugin ran: its metadata decoded and its name
//! checked, settings turned into a request, a plan decoded, held against the request's shape and
//! validated. Plain safe code over bytes from foreign code: nothing here panics.

use crate::PluginError;
use pipeweave_check::ValidPlan;
use pipeweave_plan::Plan;
use pipeweave_plugin_api::protocol::{self, Metadata, PlanMessage, Request, Response};
use std::path::Path;

/// The plugin's metadata from its reply bytes.
pub(crate) fn metadata(path: &Path, bytes: &[u8]) -> Result<Metadata, PluginError> {
    let metadata = protocol::decode_metadata(bytes).map_err(|e| PluginError::Malformed {
        path: path.to_path_buf(),
        detail: format!("its metadata: {e}"),
    })?;
    if !crate::is_plugin_name(&metadata.name) {
        return Err(PluginError::Malformed {
            path: path.to_path_buf(),
            detail: format!(
                "it calls itself `{}`, which is not a plugin name",
                metadata.name
            ),
        });
    }
    Ok(metadata)
}

/// Checks that a plugin found by its file name (`name`) calls itself by that name.
pub(crate) fn check_name(path: &Path, metadata: &Metadata, name: &str) -> Result<(), PluginError> {
    // Cargo writes `-` as `_` in file names, so both spellings match.
    if metadata.name.replace('-', "_") == name.replace('-', "_") {
        return Ok(());
    }
    Err(PluginError::Malformed {
        path: path.to_path_buf(),
        detail: format!(
            "the file is named for `{name}` but the plugin calls itself `{}`",
            metadata.name
        ),
    })
}

/// A request with the user's `--set NAME=VALUE` settings checked against the declared
/// parameters and every other parameter at its default.
pub(crate) fn request(
    path: &Path,
    metadata: &Metadata,
    ranks: u32,
    microbatches: u32,
    settings: &[(String, String)],
) -> Result<Request, PluginError> {
    // The one reading of settings, the same as a `.weave` schedule's (`pipeweave-param`).
    let declared = metadata.params.iter().map(|p| (p.name.as_str(), &p.ty));
    let given = pipeweave_param::read_settings(declared, settings).map_err(|e| {
        PluginError::BadSetting {
            path: path.to_path_buf(),
            name: metadata.name.clone(),
            message: e.to_string(),
        }
    })?;
    let params = metadata
        .params
        .iter()
        .map(|spec| {
            let value = given
                .iter()
                .find(|(n, _)| *n == spec.name)
                .map_or_else(|| spec.default_value(), |(_, v)| v.clone());
            (spec.name.clone(), value)
        })
        .collect();
    Ok(Request {
        ranks,
        microbatches,
        params,
    })
}

/// The plan in a plugin's reply to `request`, returned only once it has the shape asked for, is
/// structurally sound and is valid: a `ValidPlan`, validated once.
pub(crate) fn plan(
    path: &Path,
    metadata: &Metadata,
    request: &Request,
    bytes: &[u8],
) -> Result<ValidPlan, PluginError> {
    let malformed = |detail: String| PluginError::Malformed {
        path: path.to_path_buf(),
        detail,
    };
    let wrong_shape = |detail: String| PluginError::WrongShape {
        path: path.to_path_buf(),
        detail,
    };
    let message = match protocol::decode_response(bytes).map_err(|e| malformed(e.to_string()))? {
        Response::Error(message) => {
            return Err(PluginError::Refused {
                path: path.to_path_buf(),
                name: metadata.name.clone(),
                message,
            });
        }
        Response::Plan(message) => message,
    };
    // Before the plan is built: its tables are sized by the largest micro-batch id.
    message_shape(&message, request).map_err(wrong_shape)?;
    let plan = message
        .into_plan()
        .map_err(|e| malformed(format!("an impossible plan: {e}")))?;
    stage_spread(&plan).map_err(wrong_shape)?;
    // Validated once, here: the caller takes the `ValidPlan` as it is.
    pipeweave_check::validate(plan).map_err(|problems| PluginError::InvalidPlan {
        path: path.to_path_buf(),
        problems,
    })
}

fn plural(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The ranks and micro-batches asked for: `request.ranks` ranks, micro-batches `0..M` each
/// carried once.
fn message_shape(message: &PlanMessage, request: &Request) -> Result<(), String> {
    if message.ranks != request.ranks {
        return Err(format!(
            "it has {}, but {} were asked for",
            plural(message.ranks, "rank", "ranks"),
            request.ranks
        ));
    }
    let m = request.microbatches;
    let ids = message.pipelines.iter().flat_map(|p| p.microbatches.iter());
    if let Some(&id) = ids.clone().find(|&&id| id >= m) {
        return Err(format!(
            "it carries micro-batch {id}, but {} were asked for (0 to {})",
            plural(m, "micro-batch", "micro-batches"),
            m.saturating_sub(1)
        ));
    }
    let mut ids: Vec<u32> = ids.copied().collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != m as usize {
        return Err(format!(
            "it carries {}, but {} were asked for",
            plural(ids.len() as u64, "micro-batch", "micro-batches"),
            m
        ));
    }
    Ok(())
}

/// Every rank hosts the same number of stages, at least one: a plan for P ranks whose stages
/// spread over all of them, as a spec's parts do.
fn stage_spread(plan: &Plan) -> Result<(), String> {
    let mut per_rank = vec![0u32; plan.ranks() as usize];
    for &rank in plan.hosts() {
        if let Some(n) = per_rank.get_mut(rank as usize) {
            *n += 1;
        }
    }
    if let Some(rank) = per_rank.iter().position(|&n| n == 0) {
        return Err(format!(
            "rank {rank} hosts no stage; every rank must host as many stages as the others"
        ));
    }
    let first = per_rank.first().copied().unwrap_or(0);
    if let Some((rank, &n)) = per_rank.iter().enumerate().find(|&(_, &n)| n != first) {
        return Err(format!(
            "rank 0 hosts {} but rank {rank} hosts {n}; every rank must host as many stages as the others",
            plural(first, "stage", "stages")
        ));
    }
    Ok(())
}
