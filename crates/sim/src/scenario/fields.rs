//! A `[[flows]]` table as written, and how it becomes a typed [`Flow`].
//!
//! Serde reads every field a flow of any kind may have, each with its
//! place in the file, so syntax and unit errors and unknown fields name
//! field and line. [`RawFlow::into_flow`] then takes out the fields the
//! flow's kind (and a brisk flow's application) uses; a field left over
//! does not apply, and is reported at its own line.

use super::error::FlowError;
use super::flow::{
    Brisk, BriskApp, BriskWorkloadSpec, DEFAULT_FPS, DEFAULT_MESSAGE_BYTES, DEFAULT_PING_INTERVAL,
    DEFAULT_SOURCE_SIZE, DEFAULT_STREAM_BUFFER, EcnSpec, Flow, FlowKind, Ping, SendLimit, Source,
    Traffic, VideoDelivery,
};
use super::limits::{
    MAX_FEED_OBJECTS, MAX_FPS, MAX_MESSAGE_BYTES, MAX_SETUP_ROUND_TRIPS, MAX_STREAM_BPS,
    MIN_MESSAGE_BYTES, MIN_STREAM_BPS,
};
use brisk_netmodel::units;
use brisk_proto::congestion::CcAlgorithm;
use brisk_proto::fec::FecPolicy;
use serde::Deserialize;
use std::time::Duration;
use toml::Spanned;

/// A field error and the byte offset in the file it points at.
#[derive(Debug)]
pub(super) struct Located {
    pub(super) at: usize,
    pub(super) error: FlowError,
}

/// Declares a struct of fields kept with their spans, after any plain
/// fields, and `leftover`: the first spanned field (in file order) still set.
macro_rules! field_set {
    (
        $(#[$meta:meta])*
        struct $name:ident {
            $($(#[$pmeta:meta])* $plain:ident: $pty:ty,)*
            ;
            $($field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        pub(super) struct $name {
            $($(#[$pmeta])* $plain: $pty,)*
            $($field: Option<Spanned<$ty>>,)*
        }

        impl $name {
            /// The first field still set, in file order, and its offset.
            fn leftover(&self) -> Option<(&'static str, usize)> {
                [$((stringify!($field), self.$field.as_ref().map(|s| s.span().start))),*]
                    .into_iter()
                    .filter_map(|(name, at)| at.map(|at| (name, at)))
                    .min_by_key(|(_, at)| *at)
            }
        }
    };
}

field_set! {
    /// A `[[flows]]` table: `kind`, the fields every flow has, then every
    /// field some kind has (see docs/SCENARIOS.md for each).
    #[derive(Debug, Clone, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawFlow {
        kind: FlowKind,
        #[serde(default)] name: Option<String>,
        #[serde(default)] start: Option<Dur>,
        #[serde(default)] stop: Option<Dur>,
        #[serde(default)] rtt: Option<Dur>,
        ;
        rate: Rate,
        size: Bytes,
        ecn: EcnField,
        on: Dur,
        off: Dur,
        interval: Dur,
        send_jitter: Dur,
        cc: CcAlgorithm,
        ack_frequency: bool,
        prague_small_datagrams: bool,
        prague_burst_floor: bool,
        prague_pipe_cap: bool,
        bbr_bounded_startup: bool,
        fec: FecPolicy,
        app: BriskApp,
        bytes: Bytes,
        message_size: Bytes,
        fps: Count,
        objects: ByteList,
        sequential: bool,
        setup_round_trips: Count,
        early_data: bool,
        replay_first_flight: Dur,
        send_buffer: Bytes,
        low_water_mark: Bytes,
        delivery: VideoDelivery,
        migrate_every: Dur,
        nat_rebind_every: Dur,
        buffer: Dur,
    }
}

field_set! {
    /// The fields of a brisk flow's applications, taken out of its table
    /// once the kind is known.
    #[derive(Debug, Default)]
    struct AppFields {
        ;
        bytes: Bytes,
        message_size: Bytes,
        interval: Dur,
        fps: Count,
        objects: ByteList,
        sequential: bool,
        setup_round_trips: Count,
        early_data: bool,
        replay_first_flight: Dur,
        send_buffer: Bytes,
        low_water_mark: Bytes,
        delivery: VideoDelivery,
        buffer: Dur,
        rate: Rate,
    }
}

/// A duration in human units ("10s", "500ms").
#[derive(Debug, Clone, Copy, Deserialize)]
struct Dur(#[serde(with = "units::duration")] Duration);

/// A rate in human units ("10Mbit").
#[derive(Debug, Clone, Copy, Deserialize)]
struct Rate(#[serde(with = "units::rate_bps")] u64);

/// A size in human units ("1500B", "60KiB").
#[derive(Debug, Clone, Copy, Deserialize)]
struct Bytes(#[serde(with = "units::bytes")] u64);

/// A list of sizes such as `["4kB", "60kB"]`.
#[derive(Debug, Clone, Deserialize)]
struct ByteList(Vec<Bytes>);

/// A whole number that fits 32 bits; out of range says "too large" or
/// "too small" rather than naming a type.
#[derive(Debug, Clone, Copy)]
struct Count(u32);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match i64::deserialize(d)? {
            n if n < 0 => Err(D::Error::custom(format!("{n} is too small (at least 0)"))),
            n => u32::try_from(n)
                .map(Count)
                .map_err(|_| D::Error::custom(format!("{n} is too large (at most {})", u32::MAX))),
        }
    }
}

/// `ecn` as a codepoint name, or `false` for "not_ect". `true` is refused:
/// it would mean "ECN-capable" without saying which codepoint for the raw
/// sources, and is already the default of brisk flows.
#[derive(Debug, Clone, Copy)]
struct EcnField(EcnSpec);

impl<'de> Deserialize<'de> for EcnField {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, Visitor};
        struct V;
        impl Visitor<'_> for V {
            type Value = EcnField;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("\"not_ect\", \"ect0\", \"ect1\" or false")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                match s {
                    "not_ect" => Ok(EcnField(EcnSpec::NotEct)),
                    "ect0" => Ok(EcnField(EcnSpec::Ect0)),
                    "ect1" => Ok(EcnField(EcnSpec::Ect1)),
                    _ => Err(E::unknown_variant(s, &["not_ect", "ect0", "ect1"])),
                }
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
                if b {
                    Err(E::custom(
                        "`ecn = true` is ambiguous: name a codepoint, or omit `ecn` (brisk flows use ECN by default)",
                    ))
                } else {
                    Ok(EcnField(EcnSpec::NotEct))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// Takes a field's value out, keeping where it was.
fn take<T>(field: &mut Option<Spanned<T>>) -> Option<(T, usize)> {
    field.take().map(|s| {
        let at = s.span().start;
        (s.into_inner(), at)
    })
}

/// Takes a field's value out, without its place.
fn value<T>(field: &mut Option<Spanned<T>>) -> Option<T> {
    take(field).map(|(v, _)| v)
}

impl RawFlow {
    /// The flow's typed form, or what is wrong with it and where;
    /// `at` is the offset of the flow's own table.
    pub(super) fn into_flow(mut self, at: usize, line: usize) -> Result<Flow, Located> {
        let kind = self.kind;
        let traffic = match kind {
            FlowKind::Cbr => Traffic::Cbr(self.source(at)?),
            FlowKind::OnOff => {
                let source = self.source(at)?;
                let on = required_period(take(&mut self.on), "on", at)?;
                // An off period of zero is a cbr flow written the long way.
                let off = take(&mut self.off).map(|(d, _)| d.0).ok_or(Located {
                    at,
                    error: FlowError::Missing("off"),
                })?;
                Traffic::OnOff { source, on, off }
            }
            FlowKind::Ping => Traffic::Ping(Ping {
                interval: match take(&mut self.interval) {
                    Some((d, at)) if d.0.is_zero() => {
                        return Err(Located {
                            at,
                            error: FlowError::ZeroPeriod("interval"),
                        });
                    }
                    Some((d, _)) => d.0,
                    None => DEFAULT_PING_INTERVAL,
                },
                size_bytes: value(&mut self.size).map(|b| b.0),
                ecn: value(&mut self.ecn).map(|e| e.0).unwrap_or_default(),
                send_jitter: value(&mut self.send_jitter).map(|d| d.0),
            }),
            FlowKind::Brisk => Traffic::Brisk(self.brisk()?),
            FlowKind::UdpPrague => Traffic::UdpPrague,
        };
        if let Some((field, at)) = self.leftover() {
            return Err(Located {
                at,
                error: FlowError::NotForKind { field, kind },
            });
        }
        Ok(Flow {
            name: self.name,
            start: self.start.map(|d| d.0),
            stop: self.stop.map(|d| d.0),
            rtt: self.rtt.map(|d| d.0),
            traffic,
            line,
        })
    }

    /// The constant-rate part of a cbr or on_off flow.
    fn source(&mut self, at: usize) -> Result<Source, Located> {
        let rate_bps = value(&mut self.rate).ok_or(Located {
            at,
            error: FlowError::Missing("rate"),
        })?;
        Ok(Source {
            rate_bps: rate_bps.0,
            size_bytes: value(&mut self.size).map_or(DEFAULT_SOURCE_SIZE, |b| b.0),
            ecn: value(&mut self.ecn).map(|e| e.0).unwrap_or_default(),
            send_jitter: value(&mut self.send_jitter).map(|d| d.0),
        })
    }

    /// A brisk flow: the transport's fields, then its application's.
    fn brisk(&mut self) -> Result<Brisk, Located> {
        let ecn = match take(&mut self.ecn) {
            None => true,
            Some((EcnField(EcnSpec::NotEct), _)) => false,
            Some((_, at)) => {
                return Err(Located {
                    at,
                    error: FlowError::TransportCodepoint,
                });
            }
        };
        let cc = value(&mut self.cc).unwrap_or(CcAlgorithm::Prague);
        let ack_frequency = value(&mut self.ack_frequency).unwrap_or(true);
        let prague_small_datagrams = value(&mut self.prague_small_datagrams)
            .unwrap_or(brisk_proto::congestion::CcConfig::default().prague_small_datagrams);
        let prague_burst_floor = value(&mut self.prague_burst_floor).unwrap_or(true);
        let prague_pipe_cap = value(&mut self.prague_pipe_cap)
            .unwrap_or(brisk_proto::congestion::CcConfig::default().prague_pipe_cap);
        let bbr_bounded_startup = value(&mut self.bbr_bounded_startup).unwrap_or(false);
        let fec = value(&mut self.fec);
        let app = value(&mut self.app).unwrap_or_default();
        // Where a move is asked for: a flow whose client is the receiver
        // (early data) cannot move its sender.
        let moves_at = [
            ("migrate_every", self.migrate_every.as_ref()),
            ("nat_rebind_every", self.nat_rebind_every.as_ref()),
        ]
        .into_iter()
        .find_map(|(f, s)| s.map(|s| (f, s.span().start)));
        let moves = crate::nat::Moves {
            migrate_every: optional_period(take(&mut self.migrate_every), "migrate_every")?,
            nat_rebind_every: optional_period(
                take(&mut self.nat_rebind_every),
                "nat_rebind_every",
            )?,
        };
        let mut fields = AppFields {
            bytes: self.bytes.take(),
            message_size: self.message_size.take(),
            interval: self.interval.take(),
            fps: self.fps.take(),
            objects: self.objects.take(),
            sequential: self.sequential.take(),
            setup_round_trips: self.setup_round_trips.take(),
            early_data: self.early_data.take(),
            replay_first_flight: self.replay_first_flight.take(),
            send_buffer: self.send_buffer.take(),
            low_water_mark: self.low_water_mark.take(),
            delivery: self.delivery.take(),
            buffer: self.buffer.take(),
            rate: self.rate.take(),
        };
        // A field no brisk flow has is reported as such before any
        // application's own complaint.
        if let Some((field, at)) = self.leftover() {
            return Err(Located {
                at,
                error: FlowError::NotForKind {
                    field,
                    kind: FlowKind::Brisk,
                },
            });
        }
        let workload = fields.workload(app)?;
        if let (
            BriskWorkloadSpec::Feed {
                early_data: Some(_),
                ..
            },
            Some((field, at)),
        ) = (&workload, moves_at)
        {
            return Err(Located {
                at,
                error: FlowError::EarlyDataMoves(field),
            });
        }
        if let Some((field, at)) = fields.leftover() {
            return Err(Located {
                at,
                error: FlowError::NotForApp { field, app },
            });
        }
        Ok(Brisk {
            cc,
            ecn,
            ack_frequency,
            prague_small_datagrams,
            prague_burst_floor,
            prague_pipe_cap,
            bbr_bounded_startup,
            fec,
            app: workload,
            moves,
        })
    }
}

impl AppFields {
    /// Takes out the fields `app` uses, checked.
    fn workload(&mut self, app: BriskApp) -> Result<BriskWorkloadSpec, Located> {
        Ok(match app {
            BriskApp::Bulk => BriskWorkloadSpec::Bulk {
                bytes: positive(take(&mut self.bytes), "bytes")?,
            },
            BriskApp::Messages => BriskWorkloadSpec::Messages {
                size_bytes: match take(&mut self.message_size) {
                    None => DEFAULT_MESSAGE_BYTES,
                    Some((b, at)) if !(MIN_MESSAGE_BYTES..=MAX_MESSAGE_BYTES).contains(&b.0) => {
                        return Err(Located {
                            at,
                            error: FlowError::MessageSize,
                        });
                    }
                    Some((b, _)) => b.0,
                },
                interval: match take(&mut self.interval) {
                    Some((d, at)) if d.0.is_zero() => {
                        return Err(Located {
                            at,
                            error: FlowError::ZeroPeriod("interval"),
                        });
                    }
                    other => other.map(|(d, _)| d.0),
                },
                limit: self.limit()?,
            },
            BriskApp::Video => {
                let fps = self.fps()?;
                let delivery = value(&mut self.delivery).unwrap_or_default();
                let limit_at = self
                    .send_buffer
                    .as_ref()
                    .or(self.low_water_mark.as_ref())
                    .map(|s| s.span().start);
                let limit = self.limit()?;
                if let (VideoDelivery::Datagrams, Some(at)) = (delivery, limit_at) {
                    return Err(Located {
                        at,
                        error: FlowError::LimitNeedsStreams,
                    });
                }
                BriskWorkloadSpec::Video {
                    fps,
                    limit,
                    delivery,
                }
            }
            BriskApp::Stream => BriskWorkloadSpec::Stream {
                fps: self.fps()?,
                buffer: match take(&mut self.buffer) {
                    Some((d, at)) if d.0.is_zero() => {
                        return Err(Located {
                            at,
                            error: FlowError::ZeroPeriod("buffer"),
                        });
                    }
                    other => other.map_or(DEFAULT_STREAM_BUFFER, |(d, _)| d.0),
                },
                rate_bps: match take(&mut self.rate) {
                    Some((r, at)) if !(MIN_STREAM_BPS..=MAX_STREAM_BPS).contains(&r.0) => {
                        return Err(Located {
                            at,
                            error: FlowError::StreamRate,
                        });
                    }
                    other => other.map(|(r, _)| r.0),
                },
            },
            BriskApp::Feed => {
                let (objects, at) = take(&mut self.objects)
                    .map(|(l, at)| (l.0.into_iter().map(|b| b.0).collect::<Vec<u64>>(), at))
                    .unwrap_or_default();
                let error = if objects.is_empty() {
                    Some(FlowError::NoObjects)
                } else if objects.len() > MAX_FEED_OBJECTS {
                    Some(FlowError::TooManyObjects)
                } else if objects.contains(&0) {
                    Some(FlowError::EmptyObject)
                } else {
                    None
                };
                if let Some(error) = error {
                    return Err(Located { at, error });
                }
                let early_data = value(&mut self.early_data);
                let replay_first_flight = match take(&mut self.replay_first_flight) {
                    Some((d, at)) if d.0.is_zero() => {
                        return Err(Located {
                            at,
                            error: FlowError::ZeroPeriod("replay_first_flight"),
                        });
                    }
                    Some((_, at)) if early_data != Some(true) => {
                        return Err(Located {
                            at,
                            error: FlowError::ReplayNeedsEarlyData,
                        });
                    }
                    other => other.map(|(d, _)| d.0),
                };
                BriskWorkloadSpec::Feed {
                    objects,
                    sequential: value(&mut self.sequential).unwrap_or(false),
                    setup_round_trips: match take(&mut self.setup_round_trips) {
                        Some((n, at)) if n.0 > MAX_SETUP_ROUND_TRIPS => {
                            return Err(Located {
                                at,
                                error: FlowError::SetupRoundTrips,
                            });
                        }
                        other => other.map_or(0, |(n, _)| n.0),
                    },
                    early_data,
                    replay_first_flight,
                }
            }
        })
    }

    /// A video frame rate, checked; the default when not given.
    fn fps(&mut self) -> Result<u32, Located> {
        match take(&mut self.fps) {
            None => Ok(DEFAULT_FPS),
            Some((n, at)) if !(1..=MAX_FPS).contains(&n.0) => Err(Located {
                at,
                error: FlowError::FrameRate,
            }),
            Some((n, _)) => Ok(n.0),
        }
    }

    /// The send buffer or the low-water mark, at most one, above zero.
    fn limit(&mut self) -> Result<Option<SendLimit>, Located> {
        let buffer = positive(take(&mut self.send_buffer), "send_buffer")?;
        let mark = take(&mut self.low_water_mark);
        if buffer.is_some()
            && let Some((_, at)) = mark
        {
            return Err(Located {
                at,
                error: FlowError::TwoSendLimits,
            });
        }
        let mark = positive(mark, "low_water_mark")?;
        Ok(buffer
            .map(SendLimit::SendBuffer)
            .or(mark.map(SendLimit::LowWaterMark)))
    }
}

/// A byte count that must be above zero when given.
fn positive(field: Option<(Bytes, usize)>, name: &'static str) -> Result<Option<u64>, Located> {
    match field {
        Some((Bytes(0), at)) => Err(Located {
            at,
            error: FlowError::ZeroBytes(name),
        }),
        other => Ok(other.map(|(b, _)| b.0)),
    }
}

/// A period that must be given and above zero; `at` is the flow's offset.
/// A period that may be left out, but not zero.
fn optional_period(
    field: Option<(Dur, usize)>,
    name: &'static str,
) -> Result<Option<Duration>, Located> {
    match field {
        Some((d, at)) if d.0.is_zero() => Err(Located {
            at,
            error: FlowError::ZeroPeriod(name),
        }),
        other => Ok(other.map(|(d, _)| d.0)),
    }
}

fn required_period(
    field: Option<(Dur, usize)>,
    name: &'static str,
    at: usize,
) -> Result<Duration, Located> {
    match field {
        None => Err(Located {
            at,
            error: FlowError::Missing(name),
        }),
        Some((d, at)) if d.0.is_zero() => Err(Located {
            at,
            error: FlowError::ZeroPeriod(name),
        }),
        Some((d, _)) => Ok(d.0),
    }
}

impl RawFlow {
    /// The flow's kind, for messages about it.
    pub(super) fn kind(&self) -> FlowKind {
        self.kind
    }
}
