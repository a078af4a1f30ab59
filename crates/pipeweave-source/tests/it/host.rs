//! A host with files in memory and one plugin (`dualpipe`, from the generators).

use pipeweave_check::ValidPlan;
use pipeweave_plan::Plan;
use pipeweave_plugin_api::{Metadata, ParamSpec};
use pipeweave_source::{
    Failure, FolderFile, Host, PluginId, PluginInfo, PluginRequest, PluginTarget,
};

/// Files by path; the plugin `dualpipe` on the search path and at `lib/libdualpipe.so` (its
/// parameter `reverse=true` returns an invalid plan, as a host that does not validate would).
#[derive(Debug, Default)]
pub struct MemoryHost {
    pub files: Vec<(String, String)>,
    /// How often the plugin was asked for its metadata.
    pub loads: usize,
    /// The requests it received.
    pub requests: Vec<PluginRequest>,
    /// The `.weave` files of the schedule folders, in search order.
    pub folders: Vec<FolderFile>,
}

impl MemoryHost {
    pub fn with(files: &[(&str, &str)]) -> MemoryHost {
        MemoryHost {
            files: files
                .iter()
                .map(|(p, t)| (p.to_string(), t.to_string()))
                .collect(),
            ..MemoryHost::default()
        }
    }

    fn info() -> PluginInfo {
        PluginInfo {
            id: PluginId(7),
            metadata: Metadata {
                name: "dualpipe".into(),
                version: "1".into(),
                description: "DualPipe".into(),
                requires: "an even number of ranks P".into(),
                params: vec![
                    ParamSpec::bool("overlap", true, "overlapped pairs"),
                    ParamSpec::bool("reverse", false, "rank 0's program backwards"),
                ],
            },
            location: "lib/libdualpipe.so".into(),
        }
    }
}

impl Host for MemoryHost {
    fn is_file(&self, path: &str) -> bool {
        self.files.iter().any(|(p, _)| p == path)
    }

    fn read(&mut self, path: &str) -> Result<String, Failure> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, t)| t.clone())
            .ok_or_else(|| Failure::invalid(format!("cannot read `{path}`: not found")))
    }

    fn schedule_files(&mut self) -> Vec<FolderFile> {
        self.folders.clone()
    }

    fn has_plugin(&mut self, name: &str) -> bool {
        name == "dualpipe"
    }

    fn plugin(&mut self, target: &PluginTarget) -> Result<PluginInfo, Failure> {
        self.loads += 1;
        match target {
            PluginTarget::Named(n) if n == "dualpipe" => Ok(MemoryHost::info()),
            PluginTarget::Path(p) if p == "lib/libdualpipe.so" => Ok(MemoryHost::info()),
            other => Err(Failure::invalid(format!("no plugin {other:?}"))),
        }
    }

    fn plugins(&mut self) -> Vec<Result<PluginInfo, String>> {
        vec![Ok(MemoryHost::info()), Err("a broken plugin".into())]
    }

    fn generate(
        &mut self,
        plugin: PluginId,
        request: &PluginRequest,
    ) -> Result<ValidPlan, Failure> {
        assert_eq!(plugin, PluginId(7));
        self.requests.push(request.clone());
        let overlap = !request
            .settings
            .iter()
            .any(|(n, v)| n == "overlap" && v == "false");
        let opts = pipeweave_generators::DualOptions {
            weight_split: true,
            overlap,
        };
        let plan = pipeweave_generators::dualpipe(request.ranks, request.microbatches, opts)
            .map_err(Failure::invalid)?;
        if request
            .settings
            .iter()
            .any(|(n, v)| n == "reverse" && v == "true")
        {
            // A plugin that returns a broken plan: rank 0's program backwards, which the host's
            // validation refuses.
            let mut programs = plan.programs().to_vec();
            programs[0].reverse();
            let broken = Plan::new(plan.ranks(), plan.pipelines().to_vec(), programs)
                .map_err(|e| Failure::invalid(e.to_string()))?;
            return validated(broken);
        }
        validated(plan)
    }
}

/// What a host returns of a plugin's plan: validated, or its problems.
fn validated(plan: Plan) -> Result<ValidPlan, Failure> {
    pipeweave_check::validate(plan).map_err(|problems| {
        Failure::from_diagnostics(pipeweave_source::problem_diagnostics(None, &problems))
    })
}
