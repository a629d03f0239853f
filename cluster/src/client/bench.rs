//! The producer benchmark behind `cluster-bench`, after the reference method: N
//! producers, each with its own client (connection and client id), send fixed-size
//! batches to the partitions of one topic (producer i to partition i % M), timing each
//! batch from send to acknowledgement. Latency percentiles are taken exactly over all
//! batches (nearest rank); throughput is the user data (payload bytes) divided by the
//! wall time of the slowest producer, not a sum of per-producer rates. MB is 10^6 bytes.

use std::time::Duration;

use super::{Client, ClientConfig, ClientStats, Error};
use crate::metadata::Durability;
use crate::partition::{BATCH_BYTES_MAX, MESSAGES_PER_BATCH_MAX, Message, PAYLOAD_BYTES_MAX};

/// Parts per million in a whole: quantiles are given in parts per million so that
/// ranks are computed in integers, exactly.
pub const PER_MILLION: u64 = 1_000_000;

/// Bytes in a megabyte as the report counts them (decimal, as network rates are).
pub const BYTES_PER_MB: f64 = 1_000_000.0;

/// The `quantile_ppm`-quantile (parts per million, 1 to 1,000,000) of `sorted`
/// (ascending) by nearest rank: the smallest sample with at least that share of the
/// samples at or below it. `None` for no samples.
pub fn percentile<T: Copy>(sorted: &[T], quantile_ppm: u64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len() as u64;
    let rank = (quantile_ppm.min(PER_MILLION) * n).div_ceil(PER_MILLION).clamp(1, n);
    // rank <= n = sorted.len(), so the index fits.
    sorted.get(rank as usize - 1).copied()
}

/// Latency of acknowledged batches, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct LatencySummary {
    /// Batches measured.
    pub samples: u64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Slowest.
    pub max_ms: f64,
    /// Arithmetic mean.
    pub mean_ms: f64,
}

impl LatencySummary {
    /// Summarise `samples` (any order).
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let ms = |q: u64| percentile(&samples, q).map_or(0.0, |d| d.as_secs_f64() * 1e3);
        let total: Duration = samples.iter().sum();
        LatencySummary {
            samples: samples.len() as u64,
            p50_ms: ms(500_000),
            p90_ms: ms(900_000),
            p99_ms: ms(990_000),
            p999_ms: ms(999_000),
            max_ms: ms(PER_MILLION),
            mean_ms: if samples.is_empty() {
                0.0
            } else {
                total.as_secs_f64() * 1e3 / samples.len() as f64
            },
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Where the cluster is; each producer gets a copy (with its own random client id).
    pub client: ClientConfig,
    /// Who to log in as.
    pub username: String,
    /// Their password.
    pub password: String,
    /// Producers (each its own client and connections).
    pub producers: usize,
    /// Partitions of the topic.
    pub partitions: u32,
    /// Payload bytes per message.
    pub message_bytes: usize,
    /// Messages per batch.
    pub batch_messages: usize,
    /// Batches each producer sends.
    pub batches_per_producer: u64,
    /// Cap on the whole run's user data rate, bytes per second (`None`: unthrottled).
    pub rate_bytes_per_sec: Option<f64>,
    /// The topic's durability.
    pub durability: Durability,
    /// The stream to create (must not exist).
    pub stream_name: String,
}

impl BenchConfig {
    /// Check the batch shape against the cluster's bounds.
    pub fn validate(&self) -> Result<(), String> {
        if self.producers == 0 || self.partitions == 0 || self.batches_per_producer == 0 {
            return Err("producers, partitions and batches per producer must be at least 1".into());
        }
        if self.batch_messages == 0 || self.batch_messages > MESSAGES_PER_BATCH_MAX {
            return Err(format!(
                "--batch-messages must be 1 to {MESSAGES_PER_BATCH_MAX} (MESSAGES_PER_BATCH_MAX)"
            ));
        }
        if self.message_bytes > PAYLOAD_BYTES_MAX {
            return Err(format!(
                "--message-bytes must be at most {PAYLOAD_BYTES_MAX} (PAYLOAD_BYTES_MAX)"
            ));
        }
        if self.message_bytes * self.batch_messages > BATCH_BYTES_MAX {
            return Err(format!(
                "a batch of {} x {} bytes exceeds BATCH_BYTES_MAX ({BATCH_BYTES_MAX} payload bytes per batch)",
                self.batch_messages, self.message_bytes
            ));
        }
        if self.rate_bytes_per_sec.is_some_and(|rate| rate.is_nan() || rate <= 0.0) {
            return Err("--rate-mb-per-sec must be positive".into());
        }
        Ok(())
    }
}

/// What a run measured.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BenchReport {
    /// Producers.
    pub producers: usize,
    /// Partitions.
    pub partitions: u32,
    /// Payload bytes per message.
    pub message_bytes: usize,
    /// Messages per batch.
    pub batch_messages: usize,
    /// Batches each producer was to send.
    pub batches_per_producer: u64,
    /// "replicated" or "persisted".
    pub durability: String,
    /// Messages acknowledged.
    pub messages: u64,
    /// Payload megabytes acknowledged.
    pub megabytes: f64,
    /// Wall time of the slowest producer, seconds (first send to last answer).
    pub slowest_producer_seconds: f64,
    /// Megabytes per second: acknowledged payload over the slowest producer's wall time.
    pub throughput_mb_per_sec: f64,
    /// Messages per second, likewise.
    pub messages_per_sec: f64,
    /// Batch latency, send to acknowledgement.
    pub latency: LatencySummary,
    /// Batches that failed `NotAccepted` (never taken).
    pub not_accepted: u64,
    /// Batches that failed `NotCommitted` (outcome unknown).
    pub not_committed: u64,
    /// Producers stopped by another error.
    pub producers_failed: u64,
    /// The first such error.
    pub first_error: Option<String>,
    /// Every producer's transport counters, summed.
    pub client_stats: ClientStats,
}

/// One producer's results.
#[derive(Debug, Default)]
struct ProducerRun {
    latencies: Vec<Duration>,
    messages: u64,
    bytes: u64,
    wall: Duration,
    not_accepted: u64,
    not_committed: u64,
    error: Option<String>,
    stats: ClientStats,
}

fn add_stats(sum: &mut ClientStats, s: &ClientStats) {
    sum.requests += s.requests;
    sum.replies += s.replies;
    sum.resends += s.resends;
    sum.redirects += s.redirects;
    sum.timeouts += s.timeouts;
    sum.moves += s.moves;
    sum.refusals += s.refusals;
    sum.not_committed += s.not_committed;
    sum.unbound += s.unbound;
    sum.binds += s.binds;
    sum.binds_refused += s.binds_refused;
    sum.denied += s.denied;
    sum.replies_stale += s.replies_stale;
    sum.frames_rejected += s.frames_rejected;
    sum.dials += s.dials;
    sum.dial_failures += s.dial_failures;
    sum.reconnects += s.reconnects;
    sum.disconnects += s.disconnects;
}

async fn produce(config: &BenchConfig, index: usize, group: u64) -> ProducerRun {
    let mut run = ProducerRun::default();
    let mut client = match Client::new(config.client.clone()) {
        Ok(client) => client,
        Err(error) => {
            run.error = Some(error.to_string());
            return run;
        }
    };
    if let Err(error) = client.login(&config.username, &config.password).await {
        run.error = Some(format!("producer {index}: login: {error}"));
        run.stats = client.stats();
        return run;
    }
    let payload = vec![b'a' + (index % 26) as u8; config.message_bytes];
    let batch_bytes = (config.message_bytes * config.batch_messages) as f64;
    let rate = config.rate_bytes_per_sec.map(|rate| rate / config.producers as f64);
    run.latencies
        .reserve(usize::try_from(config.batches_per_producer).unwrap_or(0));
    let start = crate::runtime::monotonic_now();
    for batch in 0..config.batches_per_producer {
        if let Some(rate) = rate {
            tokio::time::sleep_until(start + Duration::from_secs_f64(batch as f64 * batch_bytes / rate)).await;
        }
        let first_id = (u128::from(index as u64) << 64) | u128::from(batch * config.batch_messages as u64);
        let messages: Vec<Message> = (0..config.batch_messages as u128)
            .map(|i| Message {
                id: first_id + i,
                payload: payload.clone(),
            })
            .collect();
        let sent = crate::runtime::monotonic_now();
        match client.send_messages(group, messages).await {
            Ok(_) => {
                run.latencies.push(sent.elapsed());
                run.messages += config.batch_messages as u64;
                run.bytes += batch_bytes as u64;
            }
            Err(Error::NotAccepted { .. }) => run.not_accepted += 1,
            Err(Error::NotCommitted { .. }) => run.not_committed += 1,
            Err(error) => {
                run.error = Some(format!("producer {index}: batch {batch}: {error}"));
                break;
            }
        }
    }
    run.wall = start.elapsed();
    run.stats = client.stats();
    run
}

/// Log in, create the stream and topic, run the producers and measure. An error before
/// the producers start (login, creating the stream or topic) is returned as such.
pub async fn run(config: &BenchConfig) -> Result<BenchReport, String> {
    config.validate()?;
    let mut setup = Client::new(config.client.clone()).map_err(|error| error.to_string())?;
    setup
        .login(&config.username, &config.password)
        .await
        .map_err(|error| format!("login: {error}"))?;
    let stream_id = setup
        .create_stream(&config.stream_name)
        .await
        .map_err(|error| format!("create stream {:?}: {error}", config.stream_name))?;
    let topic = setup
        .create_topic(stream_id, "bench", config.partitions, config.durability)
        .await
        .map_err(|error| format!("create topic: {error}"))?;
    let producers = (0..config.producers).map(|index| {
        let group = topic.groups[index % topic.groups.len()];
        produce(config, index, group)
    });
    let runs = futures::future::join_all(producers).await;
    let mut report = BenchReport {
        producers: config.producers,
        partitions: config.partitions,
        message_bytes: config.message_bytes,
        batch_messages: config.batch_messages,
        batches_per_producer: config.batches_per_producer,
        durability: match config.durability {
            Durability::Replicated => "replicated".into(),
            Durability::Persisted => "persisted".into(),
        },
        messages: 0,
        megabytes: 0.0,
        slowest_producer_seconds: 0.0,
        throughput_mb_per_sec: 0.0,
        messages_per_sec: 0.0,
        latency: LatencySummary::default(),
        not_accepted: 0,
        not_committed: 0,
        producers_failed: 0,
        first_error: None,
        client_stats: ClientStats::default(),
    };
    let mut latencies = Vec::new();
    let mut bytes = 0u64;
    let mut slowest = Duration::ZERO;
    for run in runs {
        latencies.extend(run.latencies);
        report.messages += run.messages;
        bytes += run.bytes;
        slowest = slowest.max(run.wall);
        report.not_accepted += run.not_accepted;
        report.not_committed += run.not_committed;
        if let Some(error) = run.error {
            report.producers_failed += 1;
            report.first_error.get_or_insert(error);
        }
        add_stats(&mut report.client_stats, &run.stats);
    }
    report.megabytes = bytes as f64 / BYTES_PER_MB;
    report.slowest_producer_seconds = slowest.as_secs_f64();
    if slowest > Duration::ZERO {
        report.throughput_mb_per_sec = report.megabytes / slowest.as_secs_f64();
        report.messages_per_sec = report.messages as f64 / slowest.as_secs_f64();
    }
    report.latency = LatencySummary::of(latencies);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank_exactly() {
        let samples: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&samples, 500_000), Some(500));
        assert_eq!(percentile(&samples, 900_000), Some(900));
        assert_eq!(percentile(&samples, 990_000), Some(990));
        assert_eq!(percentile(&samples, 999_000), Some(999));
        assert_eq!(percentile(&samples, PER_MILLION), Some(1000));
        assert_eq!(percentile(&samples, 1), Some(1), "the lowest quantile is the minimum");
        assert_eq!(percentile(&samples, 0), Some(1), "rank is at least 1");
        assert_eq!(percentile(&[1, 2, 3], 500_000), Some(2), "ceil(1.5) = rank 2");
        assert_eq!(percentile(&[1, 2, 3, 4], 500_000), Some(2), "exactly half: rank 2");
        assert_eq!(percentile(&[7], 999_000), Some(7));
        assert_eq!(percentile::<u64>(&[], 500_000), None);
        // 10 samples: p99 and p999 are the maximum, p90 the ninth.
        let ten: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile(&ten, 900_000), Some(9));
        assert_eq!(percentile(&ten, 990_000), Some(10));
        assert_eq!(percentile(&ten, 999_000), Some(10));
    }

    #[test]
    fn a_latency_summary_reads_milliseconds_from_unsorted_samples() {
        let samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        let summary = LatencySummary::of(samples);
        assert_eq!(summary.samples, 100);
        assert!((summary.p50_ms - 50.0).abs() < 1e-9);
        assert!((summary.p99_ms - 99.0).abs() < 1e-9);
        assert!((summary.max_ms - 100.0).abs() < 1e-9);
        assert!((summary.mean_ms - 50.5).abs() < 1e-9);
        assert_eq!(LatencySummary::of(Vec::new()), LatencySummary::default());
    }

    #[test]
    fn batch_shapes_past_the_cluster_bounds_are_refused() {
        let mut config = BenchConfig {
            client: ClientConfig::new("local", vec!["127.0.0.1:1".parse().expect("address")]),
            username: "root".into(),
            password: "secret".into(),
            producers: 4,
            partitions: 4,
            message_bytes: 1000,
            batch_messages: 100,
            batches_per_producer: 200,
            rate_bytes_per_sec: None,
            durability: Durability::Replicated,
            stream_name: "bench".into(),
        };
        assert_eq!(config.validate(), Ok(()));
        config.batch_messages = MESSAGES_PER_BATCH_MAX + 1;
        assert!(config.validate().is_err());
        config.batch_messages = 1000;
        config.message_bytes = 1000;
        assert!(config.validate().is_err(), "1000 x 1000 bytes is past BATCH_BYTES_MAX");
        config.message_bytes = 500;
        assert_eq!(config.validate(), Ok(()));
    }
}
