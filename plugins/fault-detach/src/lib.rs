//! Test fixture: asked for a plan, starts two `sleep 30`s that escape the worker's process group,
//! one in a session of its own (`setsid`), the other also handed away by a double fork (a `sh`
//! that starts it in the background and exits), and prints their process ids on standard output
//! (`fault-detach: started PID PID`), and appends them to the file `PIPEWEAVE_FIXTURE_PIDS`
//! names, if set. Then it answers with a DualPipeV plan, or with `--set hang=true` never returns.
//! The host must end both programs with the worker.

use pipeweave_generators::DualPipeV;
use pipeweave_plugin_api::{Generator, Metadata, ParamSpec, Request};
use std::io::Write as _;
use std::process::{Command, Stdio};

struct Detaches;

impl Generator for Detaches {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-detach".into(),
            version: "0.0.0".into(),
            description: "test fixture: starts programs that leave the worker".into(),
            requires: String::new(),
            params: vec![ParamSpec::bool(
                "hang",
                false,
                "never return after starting them",
            )],
        }
    }

    #[allow(clippy::print_stdout)]
    fn generate(request: &Request) -> Result<pipeweave_plan::Plan, String> {
        let hang = request.bool_or("hang", false)?;
        let quiet = |command: &mut Command| {
            command
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
        };
        let mut session = Command::new("setsid");
        session.args(["sleep", "30"]);
        quiet(&mut session);
        let session = session.spawn().map_err(|e| format!("setsid: {e}"))?;
        let orphan = Command::new("setsid")
            .args(["sh", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo $!"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("sh: {e}"))?;
        let orphan = String::from_utf8_lossy(&orphan.stdout).trim().to_owned();
        let started = format!("{} {orphan}", session.id());
        println!("fault-detach: started {started}");
        if let Some(file) = std::env::var_os("PIPEWEAVE_FIXTURE_PIDS") {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
                .map_err(|e| e.to_string())?;
            writeln!(file, "{started}").map_err(|e| e.to_string())?;
        }
        // The first is never waited for: the worker holds it as an unreaped child.
        std::mem::forget(session);
        if hang {
            loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        }
        DualPipeV::generate(&Request {
            ranks: request.ranks,
            microbatches: request.microbatches,
            params: Vec::new(),
        })
    }
}

pipeweave_plugin_api::export_plugin!(Detaches);
