//! The worker's side of ending what a plugin started. A plugin may start programs, and they may
//! leave the worker's process group (`setsid`) or its tree (a double fork), out of reach of the
//! host's kill of the group. On Linux the worker is made a child subreaper: an orphan anywhere
//! below it is handed to it instead of to `init`, so killing the worker's children, then the
//! orphans handed over as those die, ends everything the plugin started. Elsewhere the host's
//! kill of the group is all there is.
#![allow(unsafe_code)]

/// Makes this process the parent of the orphans among its descendants (Linux only).
pub(crate) fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `prctl` with `PR_SET_CHILD_SUBREAPER` only sets a flag of this process; failing
        // leaves it as it was (detached programs then outlive the worker, as without it).
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    }
}

/// Kills and reaps every descendant of this process: its children, then the orphans handed to it
/// as they die, until none is left. A program that keeps forking is outrun after a bounded number
/// of rounds (the host's kill of the group follows).
#[cfg(target_os = "linux")]
pub(crate) fn end_descendants() {
    const ROUNDS: usize = 10_000;
    let me = std::process::id();
    for _ in 0..ROUNDS {
        let mut status = 0;
        // SAFETY: `waitpid` writes the status of a child this process may reap.
        let reaped = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if reaped > 0 {
            continue;
        }
        if reaped < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            // No child left (or none this process may wait for).
            return;
        }
        let children = children_of(me);
        if children.is_empty() {
            // Children exist but cannot be named (no `/proc`): the host's kill of the group.
            return;
        }
        for child in children {
            // SAFETY: `kill` only sends a signal; an unreaped child's id names no other process.
            unsafe { libc::kill(child, libc::SIGKILL) };
        }
        // SAFETY: as above; waits for one of the killed children, whose orphans are then ours.
        unsafe { libc::waitpid(-1, &mut status, 0) };
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn end_descendants() {}

/// The processes whose parent is `parent`, from `/proc/<pid>/stat` (the per-task `children`
/// files are not in every kernel).
#[cfg(target_os = "linux")]
fn children_of(parent: u32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
            // `pid (name) state ppid ...`: the name may hold anything but ends at the last `)`.
            let close = stat.iter().rposition(|&b| b == b')')?;
            let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
            let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == parent).then_some(pid)
        })
        .collect()
}

/// Ends what the plugin started, then this process, at once: no exit handlers run (the plugin's
/// code may still be running on another thread, and its destructors must not).
pub(crate) fn end_worker(code: i32) -> ! {
    end_descendants();
    #[cfg(unix)]
    {
        // SAFETY: `_exit` ends the process without running anything of it.
        unsafe { libc::_exit(code) }
    }
    #[cfg(not(unix))]
    std::process::exit(code)
}
