//! Can this process use io_uring, and with which of the features ferroloop
//! needs? Asked once per process (the answer does not change: the kernel
//! is the same and a seccomp filter is inherited by every thread and child).
//!
//! io_uring is refused in many deployments: Docker's default seccomp
//! profile (Engine 25 on) and containerd 2.0's RuntimeDefault make
//! `io_uring_setup` fail with `EPERM`, the `kernel.io_uring_disabled`
//! sysctl (Linux 6.6) with `EPERM` too, kernels without it with `ENOSYS`.

use super::uring::new_ring;
use io_uring::{opcode, register::Probe, IoUring};
use std::io;
use std::sync::OnceLock;

/// What the ring of this process supports beyond the required minimum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UringFeatures {
    /// Multishot `IORING_OP_ACCEPT` (Linux 5.19; known from
    /// `IORING_OP_SOCKET`, which arrived in the same release).
    pub multishot_accept: bool,
    /// Multishot `IORING_OP_RECV` with buffer selection (Linux 6.0; known
    /// from `IORING_OP_SEND_ZC`, which arrived in the same release).
    pub multishot_recv: bool,
    /// Provided-buffer rings, `IORING_REGISTER_PBUF_RING` (Linux 5.19;
    /// registered and unregistered once to find out).
    pub buffer_rings: bool,
    /// Receive and send bundles, `IORING_FEAT_RECVSEND_BUNDLE` (Linux 6.10).
    pub bundles: bool,
}

/// The answer, kept for the life of the process.
static SUPPORT: OnceLock<Result<UringFeatures, String>> = OnceLock::new();

/// io_uring's features here, or why ferroloop cannot run on it (one
/// sentence, for the log line and the error of a forced `io_uring`).
pub fn support() -> Result<UringFeatures, String> {
    SUPPORT.get_or_init(probe).clone()
}

fn errno_name(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(libc::EPERM) => "EPERM".into(),
        Some(libc::ENOSYS) => "ENOSYS".into(),
        Some(libc::EINVAL) => "EINVAL".into(),
        Some(libc::ENOMEM) => "ENOMEM".into(),
        Some(libc::EMFILE) => "EMFILE".into(),
        _ => err.to_string(),
    }
}

/// `kernel.io_uring_disabled` (Linux 6.6; absent before).
fn disabled_sysctl() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Why `io_uring_setup` failed, as precisely as can be told from outside.
pub(super) fn setup_refused(err: &io::Error) -> String {
    let name = errno_name(err);
    match err.raw_os_error() {
        Some(libc::ENOSYS) => format!(
            "io_uring_setup failed with {name}: the kernel has no io_uring (before Linux 5.1 \
             or built without CONFIG_IO_URING), or a seccomp filter refuses it"
        ),
        Some(libc::EPERM) => match disabled_sysctl() {
            Some(2) => format!("io_uring_setup failed with {name}: kernel.io_uring_disabled = 2"),
            Some(1) => format!(
                "io_uring_setup failed with {name}: kernel.io_uring_disabled = 1 and this \
                 process is not in kernel.io_uring_group"
            ),
            _ => format!(
                "io_uring_setup failed with {name}: refused by a seccomp filter (as Docker's \
                 default profile and containerd's RuntimeDefault do) or a security module"
            ),
        },
        _ => format!("io_uring_setup failed with {name}"),
    }
}

fn probe() -> Result<UringFeatures, String> {
    let ring = new_ring().map_err(|e| setup_refused(&e))?;
    // Ring features the backend relies on (`IORING_FEAT_*`).
    if !ring.params().is_feature_nodrop() {
        return Err("io_uring lacks IORING_FEAT_NODROP (Linux 5.5)".into());
    }
    if !ring.params().is_feature_ext_arg() {
        return Err(
            "io_uring lacks IORING_FEAT_EXT_ARG, a wait with a timeout (Linux 5.11)".into(),
        );
    }
    let mut ops = Probe::new();
    ring.submitter().register_probe(&mut ops).map_err(|e| {
        format!(
            "io_uring_register(IORING_REGISTER_PROBE) failed with {} (Linux 5.6)",
            errno_name(&e)
        )
    })?;
    // Opcodes of the readiness backend: poll and its removal (Linux 5.1).
    for (code, name) in [
        (opcode::PollAdd::CODE, "IORING_OP_POLL_ADD (Linux 5.1)"),
        (
            opcode::PollRemove::CODE,
            "IORING_OP_POLL_REMOVE (Linux 5.1)",
        ),
    ] {
        if !ops.is_supported(code) {
            return Err(format!("io_uring lacks {name}"));
        }
    }
    // Stage 2 (completion-based stream I/O) needs these; the readiness
    // backend runs without them.
    let features = UringFeatures {
        multishot_accept: ops.is_supported(opcode::Socket::CODE),
        multishot_recv: ops.is_supported(opcode::SendZc::CODE),
        buffer_rings: buffer_ring_registers(&ring),
        bundles: ring.params().is_feature_recvsend_bundle(),
    };
    check_enter(ring)?;
    Ok(features)
}

/// `io_uring_enter` works (a filter may allow setup and refuse enter):
/// one no-op submitted and reaped.
fn check_enter(mut ring: IoUring) -> Result<(), String> {
    let nop = opcode::Nop::new().build().user_data(7);
    // SAFETY: a no-op references no memory.
    if unsafe { ring.submission().push(&nop) }.is_err() {
        return Err("io_uring submission queue unusable".into());
    }
    ring.submit_and_wait(1)
        .map_err(|e| format!("io_uring_enter failed with {}", errno_name(&e)))?;
    match ring.completion().next() {
        Some(cqe) if cqe.user_data() == 7 && cqe.result() >= 0 => Ok(()),
        _ => Err("io_uring_enter did not complete a no-op".into()),
    }
}

/// Register a one-entry provided-buffer ring and take it back.
fn buffer_ring_registers(ring: &IoUring) -> bool {
    const PAGE: usize = 4096;
    // SAFETY: an anonymous private mapping of one page; checked below.
    let mem = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if mem == libc::MAP_FAILED {
        return false;
    }
    // SAFETY: `mem` is a page-aligned, zeroed page that stays mapped until
    // the ring is unregistered below.
    let registered = unsafe {
        ring.submitter()
            .register_buf_ring_with_flags(mem as u64, 1, 0, 0)
    }
    .is_ok();
    if registered {
        let _ = ring.submitter().unregister_buf_ring(0);
    }
    // SAFETY: the mapping made above, no longer registered with the kernel.
    unsafe { libc::munmap(mem, PAGE) };
    registered
}
