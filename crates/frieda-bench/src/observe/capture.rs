//! Packet capture with a Linux `AF_PACKET` socket (packet(7)): every frame of one interface with
//! its kernel receive timestamp (`SO_TIMESTAMPNS`), parsed down to the TCP segment. Needs
//! CAP_NET_RAW (root). Drops counted by the kernel are read from `PACKET_STATISTICS`.

use anyhow::{bail, Result};
use std::ffi::CString;
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// Kernel receive buffer asked for (bytes): room for bursts while the reader is busy.
const RCVBUF_BYTES: libc::c_int = 64 << 20;
/// Largest frame read (bytes): loopback's MTU is 65,536.
const SNAPLEN: usize = 65_600;
/// `sll_pkttype` of a frame this host sent (seen a second time on loopback as received).
const PACKET_OUTGOING: u8 = 4;

/// One TCP segment as captured.
#[derive(Debug, Clone)]
pub struct Segment {
    /// Kernel timestamp, ns since the Unix epoch (CLOCK_REALTIME).
    pub ts_ns: u64,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub syn: bool,
    pub fin_or_rst: bool,
    pub payload: Vec<u8>,
}

/// An `AF_PACKET` socket bound to one interface.
pub struct Capture {
    fd: OwnedFd,
    /// On loopback every packet is seen twice (sent and received): the sent copy is skipped.
    skip_outgoing: bool,
    buf: Vec<u8>,
}

fn check(rc: libc::c_int, what: &str) -> Result<()> {
    if rc < 0 {
        bail!("{what}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

fn setopt(fd: libc::c_int, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> libc::c_int {
    // SAFETY: `v` lives across the call; the length matches its type.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &v as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    }
}

impl Capture {
    /// Opens the capture on `interface` (e.g. `lo`). `poll` bounds each [`next`](Self::next)
    /// wait so the caller can check its deadline. Errors: no such interface, no CAP_NET_RAW.
    pub fn open(interface: &str, poll: Duration) -> Result<Capture> {
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket(2); the fd is owned right after.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, proto as libc::c_int) };
        check(raw, "socket(AF_PACKET) (needs root or CAP_NET_RAW)")?;
        // SAFETY: `raw` is a new, valid descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let name = CString::new(interface)?;
        // SAFETY: a NUL-terminated name.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            bail!("no network interface {interface:?}");
        }
        // SAFETY: zeroed sockaddr_ll is a valid value; fields are set below.
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = index as i32;
        // SAFETY: `sll` is a sockaddr_ll of the given length.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        check(rc, "bind(AF_PACKET)")?;
        let f = fd.as_raw_fd();
        check(
            setopt(f, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1),
            "SO_TIMESTAMPNS",
        )?;
        if setopt(f, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, RCVBUF_BYTES) < 0 {
            let _ = setopt(f, libc::SOL_SOCKET, libc::SO_RCVBUF, RCVBUF_BYTES);
        }
        let tv = libc::timeval {
            tv_sec: poll.as_secs() as libc::time_t,
            tv_usec: poll.subsec_micros() as libc::suseconds_t,
        };
        // SAFETY: `tv` lives across the call; the length matches its type.
        let rc = unsafe {
            libc::setsockopt(
                f,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const libc::timeval as *const libc::c_void,
                size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        check(rc, "SO_RCVTIMEO")?;
        Ok(Capture {
            fd,
            skip_outgoing: interface == "lo",
            buf: vec![0; SNAPLEN],
        })
    }

    /// The next TCP segment, or `None` when the poll interval passed without one.
    pub fn next(&mut self) -> Result<Option<Segment>> {
        loop {
            // SAFETY: zeroed sockaddr_ll / msghdr are valid; every pointer set below refers to
            // a buffer that outlives the recvmsg call, with its true length.
            let mut from: libc::sockaddr_ll = unsafe { zeroed() };
            let mut control = [0u64; 16];
            let mut iov = libc::iovec {
                iov_base: self.buf.as_mut_ptr() as *mut libc::c_void,
                iov_len: self.buf.len(),
            };
            let mut msg: libc::msghdr = unsafe { zeroed() };
            msg.msg_name = &mut from as *mut libc::sockaddr_ll as *mut libc::c_void;
            msg.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = size_of::<[u64; 16]>() as _;
            // SAFETY: see above.
            let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, 0) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                return match e.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Ok(None),
                    std::io::ErrorKind::Interrupted => continue,
                    _ => Err(e.into()),
                };
            }
            if self.skip_outgoing && from.sll_pkttype == PACKET_OUTGOING {
                continue;
            }
            let ts_ns = timestamp(&msg).unwrap_or_else(now_ns);
            if let Some(s) = parse_ethernet(&self.buf[..n as usize], ts_ns) {
                return Ok(Some(s));
            }
        }
    }

    /// Frames the kernel dropped because this reader fell behind, since the last call.
    pub fn drops(&self) -> u64 {
        // SAFETY: tpacket_stats is plain data; the length is passed in and out.
        let mut st: libc::tpacket_stats = unsafe { zeroed() };
        let mut len = size_of::<libc::tpacket_stats>() as libc::socklen_t;
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut st as *mut libc::tpacket_stats as *mut libc::c_void,
                &mut len,
            )
        };
        if rc < 0 {
            0
        } else {
            st.tp_drops as u64
        }
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// The `SCM_TIMESTAMPNS` control message of a received frame.
fn timestamp(msg: &libc::msghdr) -> Option<u64> {
    // SAFETY: the CMSG_* macros walk the control buffer recvmsg filled, within its length.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

/// Ethernet → IPv4/IPv6 → TCP. Anything else (or truncated) is `None`.
pub fn parse_ethernet(frame: &[u8], ts_ns: u64) -> Option<Segment> {
    if frame.len() < 14 {
        return None;
    }
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let ip = &frame[14..];
    let (src, dst, tcp) = match ethertype {
        0x0800 => {
            if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != 6 {
                return None;
            }
            let ihl = (ip[0] & 0x0f) as usize * 4;
            let total = (u16::from_be_bytes([ip[2], ip[3]]) as usize).min(ip.len());
            if ihl < 20 || total < ihl {
                return None;
            }
            let s = IpAddr::V4(Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]));
            let d = IpAddr::V4(Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]));
            (s, d, &ip[ihl..total])
        }
        0x86dd => {
            // Extension headers are not followed: Kafka traffic carries none.
            if ip.len() < 40 || ip[6] != 6 {
                return None;
            }
            let plen = (u16::from_be_bytes([ip[4], ip[5]]) as usize).min(ip.len() - 40);
            let s: [u8; 16] = ip[8..24].try_into().ok()?;
            let d: [u8; 16] = ip[24..40].try_into().ok()?;
            (
                IpAddr::V6(Ipv6Addr::from(s)),
                IpAddr::V6(Ipv6Addr::from(d)),
                &ip[40..40 + plen],
            )
        }
        _ => return None,
    };
    if tcp.len() < 20 {
        return None;
    }
    let doff = (tcp[12] >> 4) as usize * 4;
    if doff < 20 || doff > tcp.len() {
        return None;
    }
    let flags = tcp[13];
    Some(Segment {
        ts_ns,
        src: SocketAddr::new(src, u16::from_be_bytes([tcp[0], tcp[1]])),
        dst: SocketAddr::new(dst, u16::from_be_bytes([tcp[2], tcp[3]])),
        seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        syn: flags & 0x02 != 0,
        fin_or_rst: flags & 0x05 != 0,
        payload: tcp[doff..].to_vec(),
    })
}
