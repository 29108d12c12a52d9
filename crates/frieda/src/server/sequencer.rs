//! The response sequencer: responses leave in request order, each as soon as it and all before
//! it are complete (dynamic eager flush), several per vectored write (batched confirmation).
//!
//! Ordering itself is kept by the connection's in-flight queue (a `FuturesOrdered` of handler
//! futures: the first contiguous run of finished responses is released in order); this module
//! is the write side: it drains every released response waiting and writes them with one
//! `writev`, with no size threshold and no timer (thesis §4.2.2, "Dynamic Eager Flush").

use bytes::Bytes;
use std::io::IoSlice;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

/// Responses written per vectored write at most (IOV_MAX is 1024 on Linux).
const MAX_IOVECS: usize = 64;

/// Writes released responses to the socket until the channel closes or the peer goes away.
/// Returns the number of responses written.
pub async fn write_loop<W: AsyncWriteExt + Unpin>(
    mut sock: W,
    mut rx: mpsc::Receiver<Bytes>,
) -> std::io::Result<u64> {
    let mut batch: Vec<Bytes> = Vec::with_capacity(MAX_IOVECS);
    let mut written = 0u64;
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < MAX_IOVECS {
            match rx.try_recv() {
                Ok(b) => batch.push(b),
                Err(_) => break,
            }
        }
        write_all_vectored(&mut sock, &mut batch).await?;
        written += batch.len() as u64;
        batch.clear();
    }
    sock.shutdown().await.ok();
    Ok(written)
}

async fn write_all_vectored<W: AsyncWriteExt + Unpin>(
    sock: &mut W,
    bufs: &mut [Bytes],
) -> std::io::Result<()> {
    let mut first = 0;
    let mut skip = 0; // bytes of bufs[first] already written
    while first < bufs.len() {
        let slices: Vec<IoSlice<'_>> = std::iter::once(IoSlice::new(&bufs[first][skip..]))
            .chain(bufs[first + 1..].iter().map(|b| IoSlice::new(b)))
            .collect();
        let mut n = sock.write_vectored(&slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while first < bufs.len() && n > 0 {
            let left = bufs[first].len() - skip;
            if n >= left {
                n -= left;
                first += 1;
                skip = 0;
            } else {
                skip += n;
                n = 0;
            }
        }
        // skip empty buffers
        while first < bufs.len() && bufs[first].len() == skip {
            first += 1;
            skip = 0;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn writes_everything_in_order() {
        let (client, mut server) = tokio::io::duplex(7); // tiny pipe: forces partial writes
        let (tx, rx) = mpsc::channel(16);
        let task = tokio::spawn(write_loop(client, rx));
        let mut expect = Vec::new();
        for i in 0..20u8 {
            let b = Bytes::from(vec![i; (i as usize % 5) + 1]);
            expect.extend_from_slice(&b);
            tx.send(b).await.unwrap();
        }
        drop(tx);
        let mut got = Vec::new();
        server.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, expect);
        assert_eq!(task.await.unwrap().unwrap(), 20);
    }
}
