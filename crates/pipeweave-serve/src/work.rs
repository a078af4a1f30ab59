//! What the server computes, as plain functions from a request to its answer: each builds a
//! [`Session`] over an [`EditorHost`] holding the editor's text, calls the application layer (the
//! same `render`, `compare` and `export` the command line calls, with the same budgets), and turns
//! the result into the page's JSON. No IO here but the application layer's clock.

use crate::host::EditorHost;
use crate::wire::{
    BuildRequest, BuildResponse, ExportRequest, Place, PlacedLabel, PlanControls, Summary,
    WireDiagnostic, WireParam, WireTable,
};
use pipeweave_app::{
    CompareRequest, CostsArg, Events, ExportFormat, FrontEnd, RenderRequest, Session, Told,
};
use pipeweave_diagnostics::{DEFAULT_MAX_DIAGNOSTICS, Diagnostic, FileId, Renderer, Severity};
use pipeweave_param::ParamType;
use pipeweave_report::TimeFormat;
use pipeweave_sim::UniformCosts;
use pipeweave_source::{Failure, Files, Params, Setting};
use std::collections::BTreeMap;
use std::time::Instant;

/// The export formats, as `pipeweave export --to` names them: (name, what it is, the file's
/// extension, its media type).
pub const FORMATS: &[(&str, &str, &str, &str)] = &[
    (
        "pytorch",
        "PyTorch compute-only CSV",
        "csv",
        "text/csv; charset=utf-8",
    ),
    (
        "pytorch-comms",
        "PyTorch compute_comms CSV",
        "csv",
        "text/csv; charset=utf-8",
    ),
    (
        "json",
        "JSON plan",
        "json",
        "application/json; charset=utf-8",
    ),
    (
        "actions",
        "actions text",
        "txt",
        "text/plain; charset=utf-8",
    ),
    (
        "chrome-trace",
        "Chrome / Perfetto trace",
        "json",
        "application/json; charset=utf-8",
    ),
];

/// The most bytes an export answered to the page may have: a plan that large is for the command
/// line, which streams it into a file.
pub const MAX_EXPORT_BYTES: usize = 256 << 20;

/// What the application layer tells on the way (a spec fitted to the plan, a warning), kept to be
/// shown beside the result.
#[derive(Debug, Default)]
struct Collected(Vec<String>);

impl Events for Collected {
    fn tell(&mut self, told: Told<'_>) {
        let text = match told {
            Told::Rendered(t) => t.trim_end().to_owned(),
            Told::Warning(t) => format!("warning: {t}"),
            Told::Note(t) => format!("note: {t}"),
        };
        // Bounded like the diagnostics: a page shows a screenful, not a flood.
        if self.0.len() < DEFAULT_MAX_DIAGNOSTICS {
            self.0.push(text);
        }
    }
}

/// The parameters and costs the controls ask for, checked as the command line checks its flags.
fn params_and_costs(controls: &PlanControls) -> Result<(Params, CostsArg), Failure> {
    let max_ranks = pipeweave_plan::MAX_RANKS;
    if let Some(p) = controls.ranks
        && !(1..=max_ranks).contains(&p)
    {
        return Err(Failure::usage(format!(
            "P = {p}: the number of ranks is a whole number from 1 to {max_ranks}"
        )));
    }
    for (what, value) in [
        ("M", controls.microbatches),
        ("v", controls.stages_per_rank),
    ] {
        if value == Some(0) {
            return Err(Failure::usage(format!(
                "{what} = 0: give a whole number of at least 1"
            )));
        }
    }
    let params = Params {
        ranks: controls.ranks,
        microbatches: controls.microbatches,
        stages_per_rank: controls.stages_per_rank,
        settings: controls
            .settings
            .iter()
            .map(|(name, value)| Setting {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
        forward_only: controls.forward_only,
        ..Params::default()
    };
    let uniform = match controls.costs.trim() {
        "" => None,
        text => Some(UniformCosts::parse(text, "costs").map_err(Failure::usage)?),
    };
    let spec = match controls.spec.trim() {
        "" => None,
        name if name == "default" || pipeweave_spec::shipped_spec(name).is_some() => {
            Some(name.to_owned())
        }
        name => {
            return Err(Failure::usage(format!(
                "spec `{}`: pick one of the shipped specs",
                pipeweave_diagnostics::visible(name)
            )));
        }
    };
    let costs = CostsArg {
        uniform,
        spec,
        ..CostsArg::default()
    };
    Ok((params, costs))
}

/// Byte offsets of the editor's text as UTF-16 offsets (what the browser counts), for a few
/// offsets at once in one pass over the text.
fn utf16_offsets(text: &str, bytes: &[usize]) -> BTreeMap<usize, usize> {
    let mut wanted: Vec<usize> = bytes.iter().map(|b| (*b).min(text.len())).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut out = BTreeMap::new();
    let mut units = 0;
    let mut next = wanted.iter().peekable();
    for (at, ch) in text.char_indices() {
        while let Some(&&b) = next.peek() {
            if b > at {
                break;
            }
            out.insert(b, units);
            next.next();
        }
        units += ch.len_utf16();
    }
    for &b in next {
        out.insert(b, units);
    }
    // Offsets past the end were clamped: map the originals too.
    for b in bytes {
        if let Some(u) = out.get(&(*b).min(text.len())).copied() {
            out.insert(*b, u);
        }
    }
    out
}

/// `diagnostics` as the page shows them: placed in the editor's text (file `editor`) where they
/// point into it, at most [`DEFAULT_MAX_DIAGNOSTICS`].
fn placed(diagnostics: &[Diagnostic], editor: Option<FileId>, text: &str) -> Vec<WireDiagnostic> {
    let shown = &diagnostics[..diagnostics.len().min(DEFAULT_MAX_DIAGNOSTICS)];
    let in_editor = |span: &pipeweave_diagnostics::Span| Some(span.file) == editor;
    let mut offsets = Vec::new();
    for d in shown {
        if let Some(s) = d.span.as_ref().filter(|s| in_editor(s)) {
            offsets.extend([s.range.start, s.range.end]);
        }
        for l in d.labels.iter().filter(|l| in_editor(&l.span)) {
            offsets.extend([l.span.range.start, l.span.range.end]);
        }
    }
    let map = utf16_offsets(text, &offsets);
    let place = |span: &pipeweave_diagnostics::Span| {
        Some(Place {
            from: *map.get(&span.range.start)?,
            to: *map.get(&span.range.end)?,
        })
    };
    shown
        .iter()
        .map(|d| WireDiagnostic {
            severity: match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Note => "note",
            },
            message: d.message.clone(),
            place: d.span.as_ref().filter(|s| in_editor(s)).and_then(place),
            label: d.span_label.clone(),
            labels: d
                .labels
                .iter()
                .filter(|l| in_editor(&l.span))
                .filter_map(|l| {
                    Some(PlacedLabel {
                        place: place(&l.span)?,
                        message: l.message.clone(),
                    })
                })
                .collect(),
            notes: d.notes.clone(),
            help: d.help.clone(),
        })
        .collect()
}

/// The editor's file in the files a session read.
fn editor_file(files: &Files, name: &str) -> Option<FileId> {
    let shown = pipeweave_source::shown_name(name);
    files
        .iter()
        .find(|(_, n, _)| *n == shown)
        .map(|(id, _, _)| id)
}

/// What the text declares, typed as `list` shows it.
fn declared(text: &str, response: &mut BuildResponse) {
    let info = pipeweave_dsl::info(text);
    response.description = info.doc;
    response.requires = info.requires;
    response.params = info
        .params
        .into_iter()
        .map(|p| {
            let (kind, min, max, step, options) = match &p.ty {
                ParamType::Bool => ("bool", None, None, None, Vec::new()),
                ParamType::Int(r) => ("int", r.min, r.max, r.multiple_of, Vec::new()),
                ParamType::Choice(options) => ("choice", None, None, None, options.clone()),
            };
            WireParam {
                name: p.name,
                kind,
                declared: p.ty.to_string(),
                min,
                max,
                step,
                options,
                default: p.default,
                help: p.help,
            }
        })
        .collect();
}

/// A failure answered to the page: its diagnostics placed, and rendered as the command line
/// renders them.
fn failed(response: &mut BuildResponse, failure: &Failure, files: &Files, name: &str, text: &str) {
    response.diagnostics = placed(&failure.diagnostics, editor_file(files, name), text);
    response.rendered = Renderer::new(files, DEFAULT_MAX_DIAGNOSTICS).many(&failure.diagnostics);
}

/// `POST /api/build`: the editor's text (called `name`) checked, built, simulated and drawn with
/// the controls, then compared with the library schedules the page picked.
pub fn build(name: &str, request: &BuildRequest) -> BuildResponse {
    let started = Instant::now();
    let text = &request.plan.text;
    let mut response = BuildResponse::default();
    declared(text, &mut response);
    let mut host = EditorHost::new(name, text.clone());
    let mut told = Collected::default();
    let mut session = Session::new(
        &mut host,
        &mut told,
        FrontEnd::CommandLine,
        DEFAULT_MAX_DIAGNOSTICS,
    );
    let drawn = params_and_costs(&request.plan).and_then(|(params, costs)| {
        let render = RenderRequest {
            schedules: vec![name.to_owned()],
            params,
            costs,
            ..RenderRequest::default()
        };
        pipeweave_app::render(&mut session, &render)
    });
    let files = std::mem::take(&mut session.files);
    drop(session);
    match drawn {
        Ok(rendered) => {
            response.ok = true;
            if let Some(d) = rendered.drawn.first() {
                let sim = pipeweave_eval::Simulation::new(&d.name, &d.plan, &d.run.timeline, None);
                response.summary = Some(Summary {
                    makespan: rendered.unit.format(d.run.timeline.timing.makespan),
                    bubble: pipeweave_report::percent(sim.bubble_fraction, 1),
                    shape: pipeweave_report::shape_text(&sim.shape),
                });
            }
            response.svg = Some(rendered.svg);
            response.rendered = told.0.join("\n");
            if !request.compare.is_empty() {
                compare(name, request, &mut response);
            }
        }
        Err(failure) => {
            failed(&mut response, &failure, &files, name, text);
            if !told.0.is_empty() {
                response.rendered = format!("{}\n{}", told.0.join("\n"), response.rendered);
            }
        }
    }
    response.took_ms = started.elapsed().as_secs_f64() * 1e3;
    response
}

/// The comparison of the editor's plan with the picked library schedules, on the spec (the
/// built-in default when none is picked), with a makespan column under `--costs` when given.
fn compare(name: &str, request: &BuildRequest, response: &mut BuildResponse) {
    let mut host = EditorHost::new(name, request.plan.text.clone());
    let mut told = Collected::default();
    let mut session = Session::new(
        &mut host,
        &mut told,
        FrontEnd::CommandLine,
        DEFAULT_MAX_DIAGNOSTICS,
    );
    let mut schedules = vec![name.to_owned()];
    for pick in &request.compare {
        if pipeweave_dsl::library::get(pick).is_none() {
            response.comparison_notes = vec![format!(
                "`{}` is no library schedule: pick one of the list",
                pipeweave_diagnostics::visible(pick)
            )];
            return;
        }
        if !schedules.contains(pick) {
            schedules.push(pick.clone());
        }
    }
    let compared = params_and_costs(&request.plan).and_then(|(params, costs)| {
        let compare = CompareRequest {
            schedules,
            params,
            spec: costs.spec,
            units: costs.uniform,
            ..CompareRequest::default()
        };
        pipeweave_app::compare(&mut session, &compare, None)
    });
    match compared {
        Ok(partial) => {
            let c = partial.value;
            response.comparison = pipeweave_report::compare_tables(&c)
                .into_iter()
                .map(|t| WireTable {
                    caption: t.caption,
                    header: t.header,
                    rows: t.rows,
                })
                .collect();
            response.comparison_notes = pipeweave_report::compare_notes(&c);
            if let Some(failure) = partial.failure {
                response.comparison_notes.insert(0, failure.reason());
            }
            response.comparison_notes.extend(told.0);
        }
        Err(failure) => response.comparison_notes = vec![failure.reason()],
    }
}

/// An export ready for the page: its bytes, its media type and a file name.
#[derive(Debug)]
pub struct ExportFile {
    /// The file's bytes, exactly what `pipeweave export` writes.
    pub bytes: Vec<u8>,
    /// Its media type.
    pub media_type: &'static str,
    /// A file name for the download.
    pub file_name: String,
}

/// A `Write` that refuses to grow past a limit.
struct Bounded(Vec<u8>);

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + buf.len() > MAX_EXPORT_BYTES {
            return Err(std::io::Error::other(format!(
                "the export is larger than {} MiB; write it with `pipeweave export -o FILE`",
                MAX_EXPORT_BYTES >> 20
            )));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `POST /api/export`: the editor's plan in a format, byte for byte what `pipeweave export --to
/// FORMAT` writes for the same text and flags; or the failure rendered as the command line
/// renders it.
pub fn export(name: &str, request: &ExportRequest) -> Result<ExportFile, String> {
    let Some(&(id, _, extension, media_type)) =
        FORMATS.iter().find(|(id, ..)| *id == request.format)
    else {
        let names: Vec<&str> = FORMATS.iter().map(|f| f.0).collect();
        return Err(format!(
            "no export format `{}`: pick one of {}",
            pipeweave_diagnostics::visible(&request.format),
            names.join(", ")
        ));
    };
    let format = match id {
        "pytorch" => ExportFormat::Pytorch,
        "pytorch-comms" => ExportFormat::PytorchComms,
        "json" => ExportFormat::Json,
        "actions" => ExportFormat::Actions,
        _ => ExportFormat::ChromeTrace,
    };
    let mut host = EditorHost::new(name, request.plan.text.clone());
    let mut told = Collected::default();
    let mut session = Session::new(
        &mut host,
        &mut told,
        FrontEnd::CommandLine,
        DEFAULT_MAX_DIAGNOSTICS,
    );
    let written = params_and_costs(&request.plan).and_then(|(params, costs)| {
        let exported = pipeweave_app::export(&mut session, name, &params, &costs, format)?;
        let document = exported.document()?;
        let mut out = Bounded(Vec::new());
        document
            .write_to(&mut out)
            .map_err(|e| Failure::invalid(format!("cannot write the export: {e}")))?;
        Ok(out.0)
    });
    let files = std::mem::take(&mut session.files);
    match written {
        Ok(bytes) => {
            let stem = pipeweave_source::shown_name(name)
                .rsplit('/')
                .next()
                .unwrap_or("playground.weave")
                .trim_end_matches(".weave");
            let stem: String = stem
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            Ok(ExportFile {
                bytes,
                media_type,
                file_name: format!("{stem}.{id}.{extension}"),
            })
        }
        Err(failure) => Err(Renderer::new(&files, DEFAULT_MAX_DIAGNOSTICS)
            .many(&failure.diagnostics)
            .trim_end()
            .to_owned()),
    }
}

#[cfg(test)]
mod tests;
