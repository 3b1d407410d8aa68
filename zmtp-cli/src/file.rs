//! `zmtp send-file` and `zmtp recv-file`: a DEALER or a ROUTER opened as `send` and `recv`
//! open theirs (endpoints, security, monitor, deadline), running the file transfer
//! protocol of the `zmtp-file` crate, with progress bars on a terminal.

use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::time::Instant;
use zmtp_file::{
    DigestCache, Outcome, Phase, RecvEvent, SendOptions, TransferError, TreeEvent, TreeReport,
};
use zmtp_tokio::Bytes;

use crate::args::{RecvFileArgs, SendFileArgs};
use crate::run::{before, note, open, supervise};
use crate::{hex, print_stdout, Failure};

/// A transfer error as the command's failure.
fn failure(e: TransferError) -> Failure {
    match e {
        TransferError::BadName(m) => Failure::Usage(format!("--name: {m}")),
        e => Failure::Runtime(e.to_string()),
    }
}

/// Progress bars drawn on standard error, or nothing when it is not a terminal.
fn bars() -> Option<MultiProgress> {
    std::io::stderr()
        .is_terminal()
        .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

/// A bar of `total` bytes showing the rate and the time left.
fn bar(multi: &MultiProgress, total: u64, label: String) -> ProgressBar {
    let style = ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    let bar = multi.add(ProgressBar::new(total));
    bar.set_style(style);
    bar.set_message(label);
    bar
}

/// `zmtp send-file`.
pub async fn send_file(args: SendFileArgs) -> Result<(), Failure> {
    let timeout = args.socket.timeout;
    let deadline = timeout.map(|t| Instant::now() + t);
    let verbose = args.socket.verbose;
    let (socket, monitor, watch, _) = before(deadline, timeout, open(&args.socket)).await?;
    let multi = bars();
    let options = SendOptions {
        name: args.name.clone(),
        digest_cache: args
            .digest_cache
            .then(DigestCache::default_file)
            .flatten()
            .map(DigestCache::persistent),
    };
    if args.file.is_dir() {
        let work = async move {
            let report = send_tree(&socket, &args.file, &options, multi, verbose).await?;
            socket.close().await;
            tree_outcome(&report)
        };
        return supervise(work, monitor, &watch, deadline, timeout).await;
    }
    let work = async move {
        let mut shown: Option<(Phase, ProgressBar)> = None;
        let result = zmtp_file::send_file_with(&socket, &args.file, &options, |p| {
            let Some(multi) = &multi else { return };
            if shown.as_ref().is_none_or(|(phase, _)| *phase != p.phase) {
                if let Some((_, old)) = shown.take() {
                    old.finish_and_clear();
                }
                let label = match p.phase {
                    Phase::Hashing => "hashing",
                    Phase::Sending => "sending",
                };
                let b = bar(multi, p.total, label.into());
                if p.phase == Phase::Sending {
                    // A resumed transfer starts at the receiver's part: rate from there.
                    b.set_position(p.done);
                    b.reset_eta();
                }
                shown = Some((p.phase, b));
            }
            if let Some((_, b)) = &shown {
                b.set_position(p.done);
            }
        })
        .await;
        if let Some((_, b)) = shown {
            b.finish_and_clear();
        }
        let report = result.map_err(failure)?;
        if verbose {
            let digest = if report.digest_cached {
                "digest from the cache"
            } else {
                "digest computed"
            };
            note(&format!(
                "sent {:?}: {} bytes, {} of them in this transfer, {digest}",
                report.name, report.size, report.sent
            ));
        }
        socket.close().await;
        Ok(())
    };
    supervise(work, monitor, &watch, deadline, timeout).await
}

/// `send-file` of a directory: one bar for the tree (bytes, and files in its message),
/// and with `-v` a line per file, per directory and per entry skipped.
async fn send_tree(
    socket: &zmtp_tokio::Socket,
    root: &std::path::Path,
    options: &SendOptions,
    multi: Option<MultiProgress>,
    verbose: bool,
) -> Result<TreeReport, Failure> {
    let mut shown: Option<ProgressBar> = None;
    let say = |shown: &Option<ProgressBar>, line: String| match shown {
        Some(b) => b.suspend(|| note(&line)),
        None => note(&line),
    };
    let result = zmtp_file::send_tree(socket, root, options, |e| {
        if let (Some(multi), TreeEvent::Progress(p)) = (&multi, e) {
            let b = shown.get_or_insert_with(|| bar(multi, p.bytes, String::new()));
            b.set_length(p.bytes);
            b.set_position(p.bytes_done);
            b.set_message(format!("{}/{} files", p.files_done, p.files));
        }
        match e {
            TreeEvent::Skipped(s) if verbose => say(&shown, s.to_string()),
            TreeEvent::Saved(r) if verbose => {
                let how = if r.sent == 0 && r.size > 0 {
                    "already there"
                } else if r.digest_cached {
                    "digest from the cache"
                } else {
                    "digest computed"
                };
                say(
                    &shown,
                    format!(
                        "sent {:?}: {} bytes, {} of them in this transfer, {how}",
                        r.name, r.size, r.sent
                    ),
                );
            }
            TreeEvent::Failed { name, reason } => {
                say(&shown, format!("not saved {name:?}: {reason}"))
            }
            TreeEvent::Dir { name, result } => match result {
                Ok(()) if verbose => say(&shown, format!("directory {name:?} created")),
                Err(reason) => say(&shown, format!("directory {name:?} refused: {reason}")),
                _ => {}
            },
            _ => {}
        }
    })
    .await;
    if let Some(b) = shown {
        b.finish_and_clear();
    }
    result.map_err(failure)
}

/// The exit status of a tree: 0 only if every file and directory was saved.
fn tree_outcome(report: &TreeReport) -> Result<(), Failure> {
    if report.all_saved() {
        return Ok(());
    }
    let files = report.saved.len() + report.failed.len();
    let mut parts = Vec::new();
    if !report.failed.is_empty() {
        parts.push(format!(
            "{} of {files} files were not saved",
            report.failed.len()
        ));
    }
    if !report.dirs_failed.is_empty() {
        parts.push(format!(
            "{} directories were refused",
            report.dirs_failed.len()
        ));
    }
    Err(Failure::Runtime(parts.join(", ")))
}

/// A routing id in words.
fn peer_text(peer: &Bytes) -> String {
    let mut out = Vec::new();
    hex::encode_into(peer, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// `zmtp recv-file`.
pub async fn recv_file(args: RecvFileArgs) -> Result<(), Failure> {
    let dir = &args.options.dir;
    if args.mkdir && !dir.exists() {
        std::fs::create_dir_all(dir).map_err(|e| {
            Failure::Runtime(format!("--mkdir: cannot create {}: {e}", dir.display()))
        })?;
    }
    if !dir.exists() {
        return Err(Failure::Usage(format!(
            "--dir {}: no such directory: create it, or add --mkdir (see 'zmtp recv-file \
             --help')",
            dir.display()
        )));
    }
    if !dir.is_dir() {
        return Err(Failure::Usage(format!(
            "--dir {}: not a directory (see 'zmtp recv-file --help')",
            dir.display()
        )));
    }
    let timeout = args.socket.timeout;
    let deadline = timeout.map(|t| Instant::now() + t);
    let verbose = args.socket.verbose;
    let (socket, monitor, watch, _) = before(deadline, timeout, open(&args.socket)).await?;
    let multi = bars();
    let work = async move {
        let mut shown: std::collections::HashMap<Bytes, ProgressBar> = Default::default();
        let mut printed: Result<(), Failure> = Ok(());
        let outcomes = zmtp_file::recv_files(&socket, &args.options, args.count, |e| match e {
            RecvEvent::Started {
                peer,
                name,
                size,
                from,
            } => {
                if verbose {
                    note(&format!(
                        "receiving {name:?} ({size} bytes) from {}, from byte {from}",
                        peer_text(peer)
                    ));
                }
                if let Some(multi) = &multi {
                    let b = bar(multi, *size, name.clone());
                    b.set_position(*from);
                    b.reset_eta();
                    shown.insert(peer.clone(), b);
                }
            }
            RecvEvent::Progress { peer, have, .. } => {
                if let Some(b) = shown.get(peer) {
                    b.set_position(*have);
                }
            }
            RecvEvent::Ended(outcome) => {
                let peer = match outcome {
                    Outcome::Saved(s) => &s.peer,
                    Outcome::Failed(f) => &f.peer,
                };
                if let Some(b) = shown.remove(peer) {
                    b.finish_and_clear();
                }
                match outcome {
                    Outcome::Saved(s) => {
                        if verbose && s.unchanged {
                            note(&format!(
                                "saved {:?}: {} bytes, there already with the same digest",
                                s.name, s.size
                            ));
                        } else if verbose {
                            note(&format!(
                                "saved {:?}: {} bytes, {} fetched, resumed at {}",
                                s.name, s.size, s.fetched, s.resumed_from
                            ));
                        }
                        if printed.is_ok() {
                            let line = format!("{}\n", s.path.display());
                            printed = print_stdout(line.as_bytes());
                        }
                    }
                    Outcome::Failed(f) => note(&format!(
                        "refused {:?} from {}: {}",
                        f.name,
                        peer_text(&f.peer),
                        f.reason
                    )),
                }
            }
            RecvEvent::Tree { peer, files, bytes } => {
                if verbose {
                    note(&format!(
                        "a tree of {files} files ({bytes} bytes) from {}",
                        peer_text(peer)
                    ));
                }
            }
            RecvEvent::Dir {
                peer, path, result, ..
            } => match result {
                Ok(()) if verbose => note(&format!("directory {}", path.display())),
                Err(reason) => note(&format!(
                    "refused the directory {} from {}: {reason}",
                    path.display(),
                    peer_text(peer)
                )),
                _ => {}
            },
            RecvEvent::Stray { peer, reason } => {
                if verbose {
                    note(&format!(
                        "answered {} with ERROR: {reason}",
                        peer_text(peer)
                    ));
                }
            }
        })
        .await
        .map_err(failure)?;
        printed?;
        socket.close().await;
        let failed = outcomes
            .iter()
            .filter(|o| matches!(o, Outcome::Failed(_)))
            .count();
        if failed > 0 {
            return Err(Failure::Runtime(format!(
                "{failed} of {} transfers failed",
                outcomes.len()
            )));
        }
        Ok(())
    };
    supervise(work, monitor, &watch, deadline, timeout).await
}
