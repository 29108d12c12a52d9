//! The coordinator partition, as a small model of Kafka's ISR rules: the controller's
//! elections from the in-sync replicas, each broker taking the role it is given (loading the
//! coordinator host as leader, truncating what diverges as follower), the leader's ISR changes,
//! high watermark, acks timeout and garbage collection, and the followers' fetches.

use super::*;

impl Sim {
    /// The controller: a leader unheard of for a session (down, paused that long, or
    /// restarted) is replaced by a running in-sync replica, or by itself once it runs again
    /// (no unclean election); the leader's ISR changes are its own (in `lead`).
    pub(super) fn controller_step(&mut self) {
        let Some(l) = self.controller.leader else {
            self.elect();
            return;
        };
        let br = &self.brokers[l];
        let gone = !br.up
            || br.incarnation != self.controller.leader_incarnation
            || (br.paused_until.is_some() && self.now - br.paused_at >= SESSION_MS);
        if !gone {
            return;
        }
        let others = self
            .controller
            .isr
            .iter()
            .any(|&b| b != l && self.healthy(b));
        if others {
            self.controller.isr.remove(&l);
            self.elect();
        } else if self.healthy(l) {
            self.elect();
        }
    }

    pub(super) fn healthy(&self, b: usize) -> bool {
        self.brokers[b].up && self.brokers[b].paused_until.is_none()
    }

    pub(super) fn elect(&mut self) {
        let candidates: Vec<usize> = self
            .controller
            .isr
            .iter()
            .copied()
            .filter(|&b| self.healthy(b))
            .collect();
        if candidates.is_empty() {
            self.controller.leader = None;
            return;
        }
        let l = candidates[self.rng.gen_range(0..candidates.len())];
        self.controller.leader = Some(l);
        self.controller.epoch += 1;
        self.controller.leader_incarnation = self.brokers[l].incarnation;
        let (e, isr) = (self.controller.epoch, self.controller.isr.clone());
        self.log(|| format!("broker {l} leads the coordinator partition (epoch {e}, isr {isr:?})"));
        for b in 0..BROKERS {
            if self.healthy(b) {
                self.sync_role(b);
            }
        }
    }

    /// A running broker takes the role the controller gives it.
    pub(super) fn sync_role(&mut self, b: usize) {
        let epoch = self.controller.epoch;
        let leads = self.controller.leader == Some(b)
            && self.controller.leader_incarnation == self.brokers[b].incarnation;
        if self.brokers[b].epoch == epoch && (leads == self.brokers[b].host.is_some()) {
            return;
        }
        if let Some(host) = self.brokers[b].host.take() {
            for w in host.unload() {
                self.refuse(w, E::NotCoordinator);
            }
            self.log(|| format!("broker {b} unloads the coordinator"));
        }
        self.brokers[b].epoch = epoch;
        self.brokers[b].appended_at.clear();
        self.brokers[b].fetched.clear();
        if leads {
            self.load(b);
        } else if let Some(l) = self.controller.leader {
            // Truncate what diverges from the new leader's log (its epoch's end offset).
            let common = self.brokers[b]
                .log
                .iter()
                .zip(&self.brokers[l].log)
                .take_while(|(x, y)| x == y)
                .count();
            if common < self.brokers[b].log.len() {
                let cut = self.brokers[b].log.len() - common;
                self.log(|| format!("broker {b} truncates {cut} records to {common}"));
                if (common as i64) < self.brokers[b].hw {
                    let hw = self.brokers[b].hw;
                    self.violate(
                        "replicas-diverged",
                        format!("broker {b} truncates to {common} below its high watermark {hw}"),
                    );
                }
                self.brokers[b].log.truncate(common);
            }
        }
    }

    pub(super) fn load(&mut self, b: usize) {
        self.stats.loads += 1;
        let mut host = match self.replay_log(b) {
            Ok(host) => host,
            Err(e) => {
                self.violate("coordinator-invariant", e);
                return;
            }
        };
        host.loaded(self.brokers[b].log.len() as i64);
        let hw = self.brokers[b].hw;
        host.high_watermark(hw);
        self.brokers[b].host = Some(host);
        let (len, e) = (self.brokers[b].log.len(), self.brokers[b].epoch);
        self.log(|| format!("broker {b} loads the coordinator: {len} records, hw {hw}, epoch {e}"));
        // The topic's partitions, created by the first leader (the metadata's creation).
        if self.brokers[b].log.is_empty() {
            for p in 0..PARTITIONS {
                let host = self.brokers[b].host.as_mut().expect("loaded");
                if let Ok(step) = host.create_partition(partition(self.topic, p)) {
                    self.append_step(b, step);
                }
            }
        }
    }

    /// As the leader: the high watermark, ISR changes, acks timeouts, garbage collection.
    pub(super) fn lead(&mut self, b: usize) {
        // A deposed leader that has not heard yet changes nothing the controller holds (its
        // ISR updates would be fenced by its old epoch) and no follower fetches from it.
        if self.brokers[b].host.is_none()
            || self.controller.leader != Some(b)
            || self.controller.epoch != self.brokers[b].epoch
        {
            return;
        }
        // ISR: followers unheard of leave; caught-up ones join.
        let hw = self.brokers[b].hw;
        let now = self.now;
        let mut isr = self.controller.isr.clone();
        for f in 0..BROKERS {
            if f == b {
                continue;
            }
            let seen = self.brokers[b].fetched.get(&f).copied();
            match seen {
                Some((_, at)) if now - at > SESSION_MS => {
                    isr.remove(&f);
                }
                None if isr.contains(&f) && self.brokers[b].log.len() as i64 > hw => {
                    // never fetched from this leader while writes wait: give it a session
                    self.brokers[b].fetched.insert(f, (0, now));
                }
                Some((offset, _)) if offset as i64 >= hw => {
                    isr.insert(f);
                }
                _ => {}
            }
        }
        isr.insert(b);
        if isr != self.controller.isr {
            let old = self.controller.isr.clone();
            self.log(|| format!("isr {old:?} -> {isr:?}"));
            self.controller.isr = isr;
        }
        // High watermark: the least log end of the ISR.
        let mut new_hw = self.brokers[b].log.len() as i64;
        for &f in &self.controller.isr {
            if f != b {
                let at = self.brokers[b].fetched.get(&f).map(|x| x.0).unwrap_or(0);
                new_hw = new_hw.min(at as i64);
            }
        }
        if new_hw > self.brokers[b].hw {
            self.brokers[b].hw = new_hw;
            let host = self.brokers[b].host.as_mut().expect("leads");
            let answered = host.high_watermark(new_hw);
            self.brokers[b].appended_at = self.brokers[b].appended_at.split_off(&new_hw);
            for (w, outcome) in answered {
                self.answer(w, outcome);
            }
        }
        // A write not replicated in time fails the host, which loads again.
        if let Some((_, &at)) = self.brokers[b].appended_at.iter().next() {
            if self.now - at > ACKS_TIMEOUT_MS {
                self.stats.failed_writes += 1;
                self.log(|| format!("broker {b}: a coordinator write timed out; loading again"));
                let back = self.brokers[b].host.as_mut().expect("leads").fail();
                for w in back {
                    self.refuse(w, E::RequestTimedOut);
                }
                self.brokers[b].appended_at.clear();
                self.load(b);
                return;
            }
        }
        self.sweep(b);
        self.compact(b);
        // Garbage collection.
        if self.now - self.brokers[b].last_gc >= 1_000 {
            self.brokers[b].last_gc = self.now;
            let host = self.brokers[b].host.as_ref().expect("leads");
            let ids: Vec<ObjectId> = host
                .deletable(self.now, DELETE_DELAY_MS)
                .into_iter()
                .map(|(id, _, _)| id)
                .collect();
            if !ids.is_empty() && !self.store_down {
                for id in &ids {
                    self.store.remove(id);
                }
                self.stats.objects_deleted += ids.len() as u64;
                let n = ids.len();
                self.log(|| format!("broker {b} deletes {n} objects"));
                let step = self.brokers[b]
                    .host
                    .as_mut()
                    .expect("leads")
                    .objects_deleted(&ids);
                if let Ok(step) = step {
                    self.append_step(b, step);
                }
            }
        }
    }

    /// The orphan sweep: list the bucket (a LIST misses objects up to 2 s young: listed late)
    /// and delete what the host finds unknown and old enough.
    fn sweep(&mut self, b: usize) {
        if self.now - self.brokers[b].last_sweep < SWEEP_EVERY_MS || self.store_down {
            return;
        }
        self.brokers[b].last_sweep = self.now;
        let lag = self.rng.gen_range(0..2_000);
        let listed: Vec<ObjectId> = self
            .store
            .keys()
            .filter(|id| id.created_ms() <= self.now - lag)
            .copied()
            .collect();
        let host = self.brokers[b].host.as_ref().expect("leads");
        let orphans = host.sweepable(&listed, self.now, SWEEP_MIN_AGE_MS);
        if !orphans.is_empty() {
            let n = orphans.len();
            self.log(|| format!("broker {b} sweeps {n} orphan objects"));
            self.stats.swept += n as u64;
            for id in orphans {
                self.store.remove(&id);
            }
        }
    }

    pub(super) fn answer(&mut self, w: Waiter, outcome: Outcome) {
        match outcome {
            Outcome::Batches(answers) => {
                self.send(Msg::CommitReply {
                    to: w,
                    result: Ok(answers),
                });
            }
            Outcome::LogStart(_) => self.stats.deletes += 1,
            Outcome::MarkerAt(offset) if w.0 >= BROKERS => self.send(Msg::MarkerReply {
                producer: w.0 - BROKERS,
                req: w.1,
                result: Ok(offset),
            }),
            Outcome::MarkerAt(_) | Outcome::Written => {}
        }
    }

    pub(super) fn append_step(&mut self, b: usize, step: Step<Waiter>) {
        match step {
            Step::Append { offset, record } => {
                let br = &mut self.brokers[b];
                if offset != br.log.len() as i64 {
                    let len = br.log.len();
                    self.violate(
                        "coordinator-invariant",
                        format!("broker {b}: a record for {offset} at log end {len}"),
                    );
                    return;
                }
                br.log.push(record);
                br.appended_at.insert(offset, self.now);
                if self.mutation == Mutation::AnswerBeforeReplicated {
                    let end = br.log.len() as i64;
                    let answered = br.host.as_mut().map(|h| h.high_watermark(end));
                    for (w, outcome) in answered.unwrap_or_default() {
                        self.answer(w, outcome);
                    }
                }
                // a leader alone in the ISR commits at once
                self.lead(b);
            }
            Step::Wait => {}
            Step::Answered(w, outcome) => self.answer(w, outcome),
        }
    }

    /// As a follower: fetch from the leader.
    pub(super) fn follow(&mut self, b: usize) {
        let Some(l) = self.controller.leader else {
            return;
        };
        if l == b || self.brokers[b].host.is_some() {
            return;
        }
        let (epoch, offset) = (self.brokers[b].epoch, self.brokers[b].log.len());
        self.send(Msg::Fetch {
            to: l,
            from: b,
            epoch,
            offset,
        });
    }
}
