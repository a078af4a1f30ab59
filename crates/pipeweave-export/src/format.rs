//! The forms a plan file comes in, and telling them apart by their text.

use pipeweave_plan::cell::is_step_cell;
use std::fmt;

/// A plan file's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanFormat {
    /// The actions text (`read_actions`), with any number of pipelines.
    Actions,
    /// PyTorch's compute-only CSV: the actions text of one pipeline.
    Pytorch,
    /// PyTorch's lowered `compute_comms` CSV (`read_pytorch_comms`).
    PytorchComms,
    /// The versioned JSON plan (`read_json`).
    Json,
}

impl PlanFormat {
    /// The name commands and documents use: `actions`, `pytorch`, `pytorch-comms`, `json`.
    pub fn name(self) -> &'static str {
        match self {
            PlanFormat::Actions => "actions",
            PlanFormat::Pytorch => "pytorch",
            PlanFormat::PytorchComms => "pytorch-comms",
            PlanFormat::Json => "json",
        }
    }

    /// The form of a plan file, from its text, in one pass that stops early: a JSON plan when the
    /// first character that is not whitespace is `{`; a `compute_comms` CSV when a cell names a
    /// step that is not computation (`1SEND_F0`, `0REDUCE_GRAD`, `2UNSHARD`, …); otherwise the
    /// actions text. A compute-only CSV is actions text, so it is never answered.
    pub fn detect(text: &str) -> PlanFormat {
        let text = text
            .strip_prefix(pipeweave_diagnostics::BOM)
            .unwrap_or(text);
        if text.trim_start().starts_with('{') {
            return PlanFormat::Json;
        }
        let steps = text
            .split(['\n', ','])
            .any(|cell| is_step_cell(cell.trim_matches(crate::actions::is_blank)));
        if steps {
            PlanFormat::PytorchComms
        } else {
            PlanFormat::Actions
        }
    }
}

impl fmt::Display for PlanFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::PlanFormat::{self, *};

    #[test]
    fn forms_are_told_apart_by_their_text() {
        let cases = [
            ("0F0,0B0\n", Actions),
            ("(0F0;1B0)OVERLAP_F_B\n", Actions),
            ("", Actions),
            ("0F0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n", PytorchComms),
            ("0F0\n 1RECV_F0 ,1F0\r\n", PytorchComms),
            ("0UNSHARD,0F0,0RESHARD\n", PytorchComms),
            ("  \n{\"format\": \"pipeweave-plan\"}", Json),
            ("\u{feff}{}", Json),
            // Not a step: no stage before the name.
            ("SEND_F0\n", Actions),
        ];
        for (text, form) in cases {
            assert_eq!(PlanFormat::detect(text), form, "{text:?}");
        }
    }

    #[test]
    fn names() {
        let all = [Actions, Pytorch, PytorchComms, Json];
        let names: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["actions", "pytorch", "pytorch-comms", "json"]);
    }
}
