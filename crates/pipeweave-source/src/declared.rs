//! What a schedule declares: its description, its parameters and its requirements, the same for a
//! `.weave` schedule and a plugin (parameters in `pipeweave-param`'s one model).

use crate::params::Setting;
use pipeweave_param::{ParamType, SettingError, Value};
use pipeweave_plugin_api::Metadata;

/// One parameter a schedule declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The name `--set NAME=VALUE` (or `-v` for `v`) gives.
    pub name: String,
    /// Its type: bool, int in a range, or choice.
    pub ty: ParamType,
    /// The default as text: a value (`true`, `2`, `direct`) or, in a `.weave` schedule, an
    /// expression over P, M and the parameters before it (`P - 1`); `None` when it must be given.
    pub default: Option<String>,
    /// What it does, in words.
    pub help: Option<String>,
}

/// What a schedule declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The first line of its description.
    pub description: String,
    /// Its parameters, in declaration order.
    pub params: Vec<Param>,
    /// What it requires of P and M, in words (empty when it says nothing): a `.weave` schedule's
    /// `require` messages, a plugin's `requires`.
    pub requires: String,
    /// The plugin a `.weave` schedule says builds the same plans (`same as plugin NAME`).
    pub same_as_plugin: Option<String>,
}

impl Declared {
    /// Whether it declares the parameter `name`.
    pub fn takes(&self, name: &str) -> bool {
        self.params.iter().any(|p| p.name == name)
    }

    /// Reads `--set NAME=VALUE` settings (and `-v`) by the one rule of `pipeweave-param`: a value
    /// per setting, or why one cannot be taken.
    pub fn read_settings(
        &self,
        settings: &[Setting],
    ) -> Result<Vec<(String, Value)>, SettingError> {
        let pairs: Vec<(String, String)> = settings
            .iter()
            .map(|s| (s.name.clone(), s.value.clone()))
            .collect();
        pipeweave_param::read_settings(self.params.iter().map(|p| (p.name.as_str(), &p.ty)), &pairs)
    }

    /// Whether the parameters of `self` and `other` are the same: names, types and defaults.
    pub fn same_params(&self, other: &Declared) -> bool {
        let key = |d: &Declared| -> Vec<(String, ParamType, Option<String>)> {
            d.params
                .iter()
                .map(|p| (p.name.clone(), p.ty.clone(), p.default.clone()))
                .collect()
        };
        key(self) == key(other)
    }

    /// What a `.weave` schedule declares, read from its source.
    pub fn of_weave(source: &str) -> Declared {
        let info = pipeweave_dsl::info(source);
        Declared {
            description: info
                .doc
                .as_deref()
                .and_then(|d| d.lines().next())
                .unwrap_or_default()
                .to_owned(),
            params: info
                .params
                .into_iter()
                .map(|p| Param {
                    name: p.name,
                    ty: p.ty,
                    default: p.default,
                    help: p.help,
                })
                .collect(),
            requires: info.requires.join("; "),
            same_as_plugin: info.same_as_plugin,
        }
    }

    /// What a plugin declares in its metadata.
    pub fn of_plugin(m: &Metadata) -> Declared {
        Declared {
            description: m.description.clone(),
            params: m
                .params
                .iter()
                .map(|p| Param {
                    name: p.name.clone(),
                    ty: p.ty.clone(),
                    default: Some(p.default.to_string()),
                    help: (!p.help.is_empty()).then(|| p.help.clone()),
                })
                .collect(),
            requires: m.requires.clone(),
            same_as_plugin: None,
        }
    }
}
