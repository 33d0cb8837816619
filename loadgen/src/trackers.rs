//! `freight loadgen --protocol teltonika|gt06 --tracker-addr host:port`: each
//! truck is a hardware tracker on a connection of its own, which logs in by
//! IMEI and sends a packet of `--records` positions every `--fix-every`
//! seconds, waiting for its acknowledgement before the next, as units do.
//! Open loop: a packet's latency counts from when it was due, so a server
//! that acknowledges late shows in the percentiles.
//!
//! The set-up gives each truck's load a device with the truck's IMEI. GT06
//! times have a resolution of a second: a packet's positions are a second
//! apart, so `--fix-every` at least `--records` keeps them all distinct.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::anyhow;
use chrono::{DateTime, Datelike, Timelike, Utc};
use futures_util::StreamExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::plot::Ramp;
use crate::report::{Outcome, Recorder, counted};
use crate::scenario::Scenario;
use crate::traffic::{Fleet, Target};

/// How the trucks send their positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// The API's fixes over HTTPS (the default).
    Http,
    /// Teltonika Codec 8 over TCP.
    Teltonika,
    /// GT06 over TCP.
    Gt06,
}

/// What `--protocol` and the flags beside it asked for.
pub struct Options {
    pub protocol: Protocol,
    pub tracker_addr: Option<String>,
    pub records: u8,
    pub json: bool,
    pub invent_loads: bool,
    /// Where a ramp's plot goes.
    pub plot: std::path::PathBuf,
}

/// The operation the report names.
pub const PACKET: &str = "tracker_packet";
/// Set-up requests at once.
const SETUP_CONCURRENCY: usize = 32;
/// A packet's acknowledgement is awaited this long before it counts as lost.
const ACK_TIMEOUT: Duration = Duration::from_secs(30);

/// `--protocol teltonika|gt06`: a device per truck, then the trucks as
/// trackers on their own connections; prints packets and records a second,
/// acknowledgement latency and connections held.
pub async fn run(
    args: &Options,
    scenario: &Scenario,
    target: &Target,
    fleet: &Fleet,
    recorder: &Arc<Recorder>,
) -> anyhow::Result<()> {
    let addr = args.tracker_addr.as_deref().ok_or_else(|| {
        anyhow!(
            "--protocol {:?} needs --tracker-addr host:port",
            args.protocol
        )
    })?;
    if args.invent_loads {
        return Err(anyhow!(
            "--protocol needs devices with the trucks' IMEIs: no --invent-loads"
        ));
    }
    let imeis = set_up(target, fleet).await?;
    if scenario.ramp {
        return ramp(args, scenario, addr, imeis, recorder).await;
    }
    let began = Instant::now();
    let until = began + scenario.duration();
    let every = Duration::from_secs_f64(scenario.fix_every_secs);
    let records = usize::from(args.records);
    let held = drive(args.protocol, addr, imeis, records, every, recorder, until).await;
    let summary = recorder.summary(began.elapsed(), false);
    if args.json {
        println!(
            "{}",
            serde_json::json!({"summary": summary, "records_per_packet": records, "connections_held": held})
        );
        return Ok(());
    }
    let packets = summary
        .operations
        .iter()
        .find(|o| o.operation == PACKET)
        .map_or(0.0, |o| o.ok as f64 / summary.seconds);
    println!(
        "{} as {:?} trackers, a packet of {records} every {} s; {held} connections held at most\n\
         {:.0} packets/s acknowledged, {:.0} records/s\n{}",
        counted(scenario.trucks, "truck"),
        args.protocol,
        scenario.fix_every_secs,
        packets,
        packets * records as f64,
        summary.table()
    );
    Ok(())
}

/// `--ramp`: the record rate raised a step at a time (each step the trucks
/// connect again, at the packet interval that offers the step's rate) until
/// a step's acknowledgement p99 passes the bound or a packet fails.
async fn ramp(
    args: &Options,
    scenario: &Scenario,
    addr: &str,
    imeis: Vec<String>,
    recorder: &Arc<Recorder>,
) -> anyhow::Result<()> {
    let records = usize::from(args.records);
    let mut ramp = Ramp::new(scenario.p99_bound_ms, &args.plot);
    for step in 0..scenario.ramp_steps {
        let rate = scenario.ramp_rate(step);
        let every = Duration::from_secs_f64(f64::from(scenario.trucks) * records as f64 / rate);
        let began = Instant::now();
        let until = began + Duration::from_secs(scenario.ramp_step_secs);
        let held = drive(
            args.protocol,
            addr,
            imeis.clone(),
            records,
            every,
            recorder,
            until,
        )
        .await;
        let summary = recorder.summary(began.elapsed(), true);
        let (ok, p99, errors) = summary
            .operations
            .iter()
            .find(|o| o.operation == PACKET)
            .map_or((0, 0.0, 0), |o| (o.ok, o.p99_ms, o.errors.values().sum()));
        let achieved = (ok as usize * records) as f64 / summary.seconds;
        if !args.json {
            eprintln!(
                "step {}: offered {rate:.0} records/s, achieved {achieved:.0}/s, p99 {p99:.1} ms, {errors} errors, {held} connections",
                step + 1
            );
        }
        if !ramp.step(rate, achieved, p99, errors) {
            break;
        }
    }
    ramp.finish(&args.plot)?;
    if args.json {
        println!(
            "{}",
            json!({"ramp": ramp, "records_per_packet": records, "trucks": scenario.trucks})
        );
    } else {
        print!(
            "{} as {:?} trackers, packets of {records}, records/s from {:.0}, {:.0} more every {} s\n{}",
            counted(scenario.trucks, "truck"),
            args.protocol,
            scenario.ramp_start_per_sec,
            scenario.ramp_step_per_sec,
            scenario.ramp_step_secs,
            ramp.table("records")
        );
    }
    Ok(())
}

/// Creates a device for each truck's load, its identifier an IMEI of this
/// run (`35`, five digits of the process id, eight of the truck): the IMEIs,
/// in the fleet's order.
pub async fn set_up(target: &Target, fleet: &Fleet) -> anyhow::Result<Vec<String>> {
    let run = std::process::id() % 100_000;
    let made = futures_util::stream::iter(fleet.load_ids().into_iter().enumerate())
        .map(|(i, load)| async move {
            let imei = format!("35{run:05}{i:08}");
            let device = target
                .must_post(
                    "/devices",
                    json!({"name": format!("Unit {i}"), "identifier": imei}),
                )
                .await?;
            let id = device["data"]["id"]
                .as_str()
                .ok_or_else(|| anyhow!("the device answer has no id: {device}"))?;
            target
                .must_put(&format!("/loads/{load}/device"), json!({"device_id": id}))
                .await?;
            Ok::<_, anyhow::Error>(imei)
        })
        .buffered(SETUP_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    made.into_iter().collect()
}

/// Runs every unit until `until`; the most connections held at once.
pub async fn drive(
    protocol: Protocol,
    addr: &str,
    imeis: Vec<String>,
    records: usize,
    every: Duration,
    recorder: &Arc<Recorder>,
    until: Instant,
) -> usize {
    let held = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
    let units = imeis.into_iter().enumerate().map(|(i, imei)| {
        let (held, recorder, addr) = (held.clone(), recorder.clone(), addr.to_owned());
        // Spread over the interval, so the packets do not come in waves.
        let offset = every.mul_f64(i as f64 / 997.0 % 1.0);
        tokio::spawn(async move {
            let unit = Unit {
                protocol,
                imei,
                records,
                lat: 30.0 + (i % 1000) as f64 / 100.0,
            };
            if let Err(error) = unit
                .run(&addr, offset, every, &held, &recorder, until)
                .await
            {
                recorder.record(PACKET, Duration::ZERO, Outcome::Failed(error));
            }
        })
    });
    futures_util::future::join_all(units.collect::<Vec<_>>()).await;
    held.1.load(Ordering::Relaxed)
}

struct Unit {
    protocol: Protocol,
    imei: String,
    records: usize,
    lat: f64,
}

impl Unit {
    async fn run(
        &self,
        addr: &str,
        offset: Duration,
        every: Duration,
        held: &(AtomicUsize, AtomicUsize),
        recorder: &Recorder,
        until: Instant,
    ) -> Result<(), String> {
        let mut stream = TcpStream::connect(addr)
            .await
            .map_err(|_| "connect".to_owned())?;
        stream.set_nodelay(true).ok();
        let (login, accepted) = self.login();
        stream
            .write_all(&login)
            .await
            .map_err(|_| "login".to_owned())?;
        let mut answer = vec![0; accepted.len()];
        read(&mut stream, &mut answer)
            .await
            .map_err(|_| "login refused".to_owned())?;
        if answer != accepted {
            return Err("login refused".into());
        }
        let now_held = held.0.fetch_add(1, Ordering::Relaxed) + 1;
        held.1.fetch_max(now_held, Ordering::Relaxed);
        let mut due = Instant::now() + offset;
        let mut serial: u16 = 1;
        while due < until {
            tokio::time::sleep_until(due).await;
            let (packet, ack) = self.packet(Utc::now(), &mut serial);
            let sent = stream.write_all(&packet).await;
            let mut got = vec![0; ack.len()];
            let outcome = match sent {
                Err(_) => Outcome::Failed("write".into()),
                Ok(()) => match read(&mut stream, &mut got).await {
                    Ok(()) if got == ack => Outcome::Ok,
                    Ok(()) => Outcome::Refused(0, "wrong ack".into()),
                    Err(kind) => Outcome::Failed(kind),
                },
            };
            let failed = !matches!(outcome, Outcome::Ok);
            recorder.record(PACKET, due.elapsed(), outcome);
            if failed {
                break;
            }
            due += every;
        }
        held.0.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }

    /// The login and the answer that accepts it.
    fn login(&self) -> (Vec<u8>, Vec<u8>) {
        match self.protocol {
            Protocol::Teltonika => {
                let imei = self.imei.as_bytes();
                (
                    [&(imei.len() as u16).to_be_bytes()[..], imei].concat(),
                    vec![1],
                )
            }
            _ => {
                let digits = format!("0{}", self.imei);
                let terminal: Vec<u8> = (0..16)
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap_or(0))
                    .collect();
                (gt06(0x01, &terminal, 0), gt06_echo(0x01, 0))
            }
        }
    }

    /// A packet of positions taken up to `now`, and its acknowledgement.
    fn packet(&self, now: DateTime<Utc>, serial: &mut u16) -> (Vec<u8>, Vec<u8>) {
        let n = self.records;
        match self.protocol {
            Protocol::Teltonika => {
                let mut data = vec![0x08, n as u8];
                for i in 0..n {
                    let at = now - chrono::Duration::milliseconds((n - 1 - i) as i64);
                    data.extend_from_slice(&(at.timestamp_millis() as u64).to_be_bytes());
                    data.push(0);
                    data.extend_from_slice(&(-970_000_000i32).to_be_bytes());
                    data.extend_from_slice(&((self.lat * 1e7) as i32).to_be_bytes());
                    data.extend_from_slice(&[0, 100, 0, 90, 9, 0, 88, 0, 0, 0, 0, 0, 0]);
                }
                data.push(n as u8);
                let frame = [
                    &[0, 0, 0, 0][..],
                    &(data.len() as u32).to_be_bytes(),
                    &data,
                    &u32::from(crc_arc(&data)).to_be_bytes(),
                ]
                .concat();
                (frame, (n as u32).to_be_bytes().to_vec())
            }
            _ => {
                let (mut frames, mut acks) = (Vec::new(), Vec::new());
                for i in 0..n {
                    let at = now - chrono::Duration::seconds((n - 1 - i) as i64);
                    *serial = serial.wrapping_add(1);
                    let mut info = vec![
                        (at.year() - 2000) as u8,
                        at.month() as u8,
                        at.day() as u8,
                        at.hour() as u8,
                        at.minute() as u8,
                        at.second() as u8,
                        0xC9,
                    ];
                    info.extend_from_slice(&((self.lat * 1_800_000.0) as u32).to_be_bytes());
                    info.extend_from_slice(&(97u32 * 1_800_000).to_be_bytes());
                    info.push(88);
                    info.extend_from_slice(&(0x1C00u16 | 90).to_be_bytes());
                    info.extend_from_slice(&[0x01, 0xCC, 0x00, 0x28, 0x7D, 0x00, 0x1F, 0xB8]);
                    frames.extend(gt06(0x12, &info, *serial));
                    acks.extend(gt06_echo(0x12, *serial));
                }
                (frames, acks)
            }
        }
    }
}

async fn read(stream: &mut TcpStream, into: &mut [u8]) -> Result<(), String> {
    match tokio::time::timeout(ACK_TIMEOUT, stream.read_exact(into)).await {
        Err(_) => Err("ack timeout".into()),
        Ok(Err(_)) => Err("closed".into()),
        Ok(Ok(_)) => Ok(()),
    }
}

fn gt06(protocol: u8, info: &[u8], serial: u16) -> Vec<u8> {
    let mut checked = vec![(info.len() + 5) as u8, protocol];
    checked.extend_from_slice(info);
    checked.extend_from_slice(&serial.to_be_bytes());
    let crc = crc_x25(&checked);
    [
        &[0x78, 0x78][..],
        &checked,
        &crc.to_be_bytes(),
        &[0x0D, 0x0A],
    ]
    .concat()
}

fn gt06_echo(protocol: u8, serial: u16) -> Vec<u8> {
    gt06(protocol, &[], serial)
}

/// CRC-16/ARC and CRC-16/X-25, as the units compute them (the service's own
/// are in freight::ingest::trackers::crc, which this crate does not depend on).
fn crc_arc(bytes: &[u8]) -> u16 {
    reflected(bytes, 0xA001, 0, 0)
}

fn crc_x25(bytes: &[u8]) -> u16 {
    reflected(bytes, 0x8408, 0xFFFF, 0xFFFF)
}

fn reflected(bytes: &[u8], poly: u16, init: u16, xorout: u16) -> u16 {
    let mut crc = init;
    for &byte in bytes {
        crc ^= u16::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ poly
            } else {
                crc >> 1
            };
        }
    }
    crc ^ xorout
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frames_carry_the_checksums_the_service_checks() {
        assert_eq!(crc_arc(b"123456789"), 0xBB3D);
        assert_eq!(crc_x25(b"123456789"), 0x906E);
        // The GT06 login reply of Traccar's test suite (serial 1).
        assert_eq!(
            gt06_echo(0x01, 1),
            [0x78, 0x78, 0x05, 0x01, 0x00, 0x01, 0xD9, 0xDC, 0x0D, 0x0A]
        );
    }
}
