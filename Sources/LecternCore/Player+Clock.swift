import Foundation

/// The position clock as the player keeps it: the ``PlayerView``'s clock, which clients read (MPRIS Position), and
/// the same clock on the player's `now`, by which it compares the clock with the engine.
struct ClockKeeping {
    /// Where the clock was set, when (on `now`), and its speed (0: standing).
    var anchor: Duration = .zero
    var at: Duration = .zero
    var speed = 0.0
    /// Playing, the clock waits at its anchor for the output to play from there (after a load, a seek, a resume, a
    /// change of speed), or for the engine to catch up with it: since when (on `now`).
    var heldSince: Duration?
    /// Until when (on `now`) the player's wake-up polls the engine every ``Player/clockPollInterval``
    /// (``Player/scheduleWake()``): while the clock is held, and for ``Player/clockSettleTime`` after, while an output
    /// that just started may still stop to fill its buffer.
    var pollUntil: Duration = .zero
    /// Where clients reckon the position from, and when (on `now`): the last Seeked, or the start of playing (they
    /// read Position when the status changes). Playing, they reckon it forward at the rate.
    var base: (position: Duration, at: Duration) = (.zero, .zero)

    func position(at now: Duration) -> Duration { speed > 0 ? anchor + (now - at) * speed : anchor }

    /// Clients reckon from the clock's position now.
    mutating func rebase(at now: Duration) { base = (position(at: now), now) }

    /// How far the clock is from clients' reckoning at `rate`, either way.
    func offReckoning(at now: Duration, rate: Double) -> Duration {
        let reckoned = base.position + (now - base.at) * rate
        let here = position(at: now)
        return max(here - reckoned, reckoned - here)
    }
}

/// How the position clock follows the engine (MPRIS's rule: the position moves only at Rate, or with a Seeked).
///
/// Playing, the clock runs at the rate from what the engine says it plays, and never steps back: after a load, a
/// seek, a resume or a change of speed it stands at the target until the engine plays past it (an audio sink starts
/// its output a buffer later: pulsesink on a null sink 0.1-1.5 s, measured), and while running it stops when it is
/// more than ``clockTolerance`` ahead of the engine, until the engine catches up. A jump of the engine ahead (a
/// skipped silence heard) moves it ahead. Clients that reckon the position at Rate from where they last read it (the
/// last Seeked, or the start of playing: ``ClockKeeping/base``) are told where it is (Seeked) whenever it is more than
/// ``clockTolerance`` away from that reckoning: after a wait longer than that, after a jump that no skipped silence
/// explains (Player+Silence.swift tells those), after small steps that add up.
extension Player {
    /// How far the clock may be from the engine, and clients' reckoning from the clock, unannounced.
    public static let clockTolerance: Duration = .milliseconds(80)
    /// How often the engine is polled while the clock waits for it.
    public static let clockPollInterval: Duration = .milliseconds(40)
    /// How long the engine is still polled once the clock runs again.
    public static let clockSettleTime: Duration = .seconds(1)

    /// The clock stands at `position` (paused, stopped, loading, or playing until the output plays from there:
    /// ``holdClock()``).
    func setClock(at position: Duration) {
        clock.anchor = position
        clock.at = now()
        clock.speed = 0
        clock.heldSince = nil
        view.set(PositionClock(anchor: position))
    }

    /// The clock runs at the rate from `position`, which the engine plays now (or, at a gapless handover, starts to).
    func runClock(from position: Duration) {
        clock.anchor = position
        clock.at = now()
        clock.speed = state.rate
        clock.heldSince = nil
        // Playing from the engine's own position: what a skipped silence is reckoned from (Player+Silence.swift).
        view.set(PositionClock(anchor: position, speed: state.rate))
    }

    /// Playing: the clock stands where it is until the engine plays past it (``followEngine()``). Already standing
    /// there (a load that became ready), since when is kept. `rebase`: a command stopped it (a start, a seek, a new
    /// speed), and clients reckon from here; not when the clock waits for the engine to catch up.
    func holdClock(rebase: Bool = true) {
        let since = clock.heldSince
        setClock(at: clockPosition)
        guard state.status == .playing else { return }
        clock.heldSince = since ?? now()
        if rebase, since == nil { clock.rebase(at: now()) }
        pollEngine()
    }

    /// The clock's position now, on the player's `now`.
    var clockPosition: Duration { clock.position(at: now()) }

    /// Compares the clock with the engine (playing) and follows it; returns whether the clock, running, is now more
    /// than ``clockTolerance`` from clients' reckoning (the output started late, or came out ahead, or small steps
    /// added up), for the caller to tell them unless a skipped silence explains it.
    @discardableResult
    func followEngine() -> Bool {
        guard state.status == .playing, engineReady, let heard = heardPosition else { return false }
        if clock.heldSince != nil {
            guard heard > clock.anchor else { return false }  // not yet playing from there
            runClock(from: heard)
            clock.pollUntil = now() + Self.clockSettleTime
        } else {
            let reckoned = clockPosition
            if reckoned - heard > Self.clockTolerance {
                holdClock(rebase: false)
                return false
            }
            if heard >= reckoned { runClock(from: heard) }
        }
        return clock.offReckoning(at: now(), rate: state.rate) > Self.clockTolerance
    }

    /// The engine's position, within the current file: around a gapless handover and after skipped silence a sink
    /// can answer past its end (24 s in a 12 s file, measured on pulsesink).
    var heardPosition: Duration? {
        guard let heard = engine.position else { return nil }
        return state.current?.duration.map { min(heard, $0) } ?? heard
    }

    /// Tells clients where the position is (Seeked, within the chapter). After every move other than playing at the
    /// rate, a new chapter included: a client that keys its position on the trackid sees no change between the
    /// spec's object-path trackids (KDE Plasma's engine), and a paused position stays where the last Seeked said.
    func tellPosition() {
        tell(.seeked(chapterPosition))
    }

    /// The clock's position within the current chapter: what Seeked carries.
    var chapterPosition: Duration { clockPosition - (state.chapter?.start ?? .zero) }

    /// Polls the engine every ``clockPollInterval`` while the clock waits for it and for ``clockSettleTime`` after.
    func pollEngine() {
        clock.pollUntil = max(clock.pollUntil, now() + Self.clockSettleTime)
        scheduleWake()
    }

    /// Whether the wake-up polls the engine.
    var pollsEngine: Bool { state.status == .playing && (clock.heldSince != nil || now() < clock.pollUntil) }

    /// ``followEngine()``, with skipped silence taken in and a jump told; returns whether a skipped silence is to be
    /// told (the tick tells it once the chapter it reached is published).
    @discardableResult
    func followEngineAndTell() -> Bool {
        let reckoned = reckonSilence()
        let off = followEngine()
        let skippedBefore = silence.skipped
        let silenceSkipped = noteSkippedSilence(reckoned: reckoned)
        if off, silence.skipped == skippedBefore { tellPosition() }
        return silenceSkipped
    }

    /// The tick's and the wake-up's look at the engine: the clock follows it, then what playing reached is checked (a
    /// chapter, a line of lyrics, an outro), and a pause skip silence shortened is told once the chapter its jump
    /// reached is published.
    func followEngineAndCheckPosition() {
        let silenceSkipped = followEngineAndTell()
        checkPosition(tellingSkippedSilence: silenceSkipped)
        if silenceSkipped, state.status == .playing, engineReady { tell(.silenceSkipped(chapterPosition)) }
    }
}
