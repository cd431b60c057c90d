import Foundation

/// The sleep timer and the wake-ups that drive it and the chapter boundaries: the parts of the player
/// that act at a point in time rather than on a command.
extension Player {
    /// The sleep timer's own state; `state.sleepTimer` is what clients see of it.
    struct SleepState {
        var mode: SleepMode
        /// Playing time left (`.after` only).
        var remaining: Duration
        /// When `remaining` was last counted down (on `now`), while playing; nil while not playing.
        var countedAt: Duration?
        /// Chapter ends still to let pass (`.endOfChapter`, after an extension).
        var extraChapters = 0
        var fading = false
    }

    /// Starts, replaces or (nil) cancels the sleep timer. `.after` needs a positive duration.
    public func setSleepTimer(_ mode: SleepMode?) throws(PlayerError) {
        outputPause = nil
        if case .after(let duration) = mode, duration <= .zero {
            throw .invalidValue("the sleep timer needs a positive duration, not \(duration)")
        }
        if sleep?.fading == true { setEngineVolume(state.volume) }
        sleep = mode.map { mode in
            var timer = SleepState(mode: mode, remaining: .zero)
            if case .after(let duration) = mode { timer.remaining = duration }
            timer.countedAt = state.status == .playing ? now() : nil
            return timer
        }
        syncSleepStatus()
        publish()
        updateSleepTimer()
    }

    /// Playing time until the timer stops playback: nil without a timer, or at a chapter end still unknown.
    public var sleepTimeLeft: Duration? {
        switch sleepCount {
        case .playingTime(let left)?:
            return left
        case .thisChapterEnd?:
            guard let end = state.currentChapter.flatMap(state.playedEnd(ofChapter:)) else { return nil }
            return max(.zero, end - position) / state.rate
        case .laterChapterEnd?, nil:
            return nil
        }
    }

    /// The timer as the published view counts it on (``PlayerView/sleepTimeLeft(at:)``).
    var sleepCount: PlayerView.SleepCount? {
        guard let timer = sleep else { return nil }
        switch timer.mode {
        case .after:
            var left = timer.remaining
            if let countedAt = timer.countedAt { left -= now() - countedAt }
            return .playingTime(max(.zero, left))
        case .endOfChapter:
            return timer.extraChapters == 0 ? .thisChapterEnd : .laterChapterEnd
        }
    }

    /// Counts the playing time since the last count off the timer.
    func countSleepTime() {
        guard let countedAt = sleep?.countedAt else { return }
        let now = now()
        sleep?.remaining -= now - countedAt
        sleep?.countedAt = now
    }

    /// Copies the timer into the published state.
    func syncSleepStatus() {
        state.sleepTimer = sleep.map { SleepTimerStatus(mode: $0.mode, fading: $0.fading) }
    }

    /// A command during the fade: the volume comes back and the timer runs for as long again (or to the
    /// end of the next chapter).
    func extendSleepTimerIfFading() {
        guard sleep?.fading == true else { return }
        countSleepTime()
        guard var timer = sleep else { return }
        switch timer.mode {
        case .after(let duration): timer.remaining = max(.zero, timer.remaining) + duration
        case .endOfChapter: timer.extraChapters += 1
        }
        timer.fading = false
        sleep = timer
        setEngineVolume(state.volume)
        syncSleepStatus()
        publish()
    }

    /// Fades the volume in the timer's last seconds, and stops playback when the time is up.
    func updateSleepTimer() {
        guard sleep != nil, state.status == .playing else { return }
        countSleepTime()
        guard let timer = sleep, let left = sleepTimeLeft else { return }
        if case .after = timer.mode, left <= .zero {
            fireSleepTimer()
            return
        }
        guard left <= options.sleepFade else { return }
        let factor = options.sleepFade > .zero ? left / options.sleepFade : 0
        setEngineVolume(state.volume * max(0, min(1, factor)))
        if !timer.fading {
            sleep?.fading = true
            syncSleepStatus()
            publish()
        }
    }

    /// Playing went from one chapter into the next: the moment an end-of-chapter timer stops.
    func chapterEnded() {
        guard let timer = sleep, case .endOfChapter = timer.mode else { return }
        if timer.extraChapters > 0 {
            sleep?.extraChapters -= 1
            syncSleepStatus()
            publish()
        } else {
            fireSleepTimer()
        }
    }

    /// Pauses where the timer ran out, restores the volume and tells the observers (for a bookmark).
    private func fireSleepTimer() {
        let at = position
        sleep = nil
        pauseNow()
        setEngineVolume(state.volume)
        syncSleepStatus()
        publish()
        if let item = state.current { tell(.sleepTimerFired(item, at: at)) }
    }

    // MARK: - Wake-ups

    /// Plans the next wake-up while playing: the next chapter boundary in this file, the next synced line of lyrics,
    /// just past the file's end when the engine has a next one, the start of its skipped outro, the start of the fade
    /// or its next step, the end of the timer, the next poll of the engine while the clock waits for it. The tick
    /// (``tickInterval``) catches anything a late wake-up misses.
    func scheduleWake() {
        wakeTask?.cancel()
        wakeTask = nil
        guard state.status == .playing, engineReady, let current = state.currentChapter else { return }
        let rate = state.rate
        let here = position
        var delays: [Duration] = []
        if current + 1 < state.chapters.count, state.chapters[current + 1].itemIndex == state.chapters[current].itemIndex {
            delays.append((state.chapters[current + 1].start - here) / rate)
        }
        // Just past the end of the file, while the engine should be going on with the next one: a handover that
        // didn't happen is caught within a fraction of a second (``watchForHandover(_:)``), not at a tick.
        if advanceAtEndOfFile || pendingNext != nil, let duration = state.current?.duration {
            if here < duration {
                delays.append((duration - here) / rate + Self.handoverLimit / 2)
            } else if standing?.position == here {
                delays.append(Self.handoverLimit / 2)  // standing at (or past) the end: look again
            }
        }
        // Where the file's skipped outro begins: playing goes on to the next file there.
        if !playsOutro, let end = outroStart, here < end {
            delays.append((end - here) / rate)
        }
        if let next = state.lyricsNextLineStart {
            delays.append((next - here) / rate)
        }
        // The clock waiting for the output to play (Player+Clock.swift).
        if pollsEngine { delays.append(Self.clockPollInterval) }
        if let left = sleepTimeLeft {
            let step = Duration.milliseconds(250)
            delays.append(left <= options.sleepFade ? min(left, step) : left - options.sleepFade)
        }
        guard let soonest = delays.min() else { return }
        let delay = max(soonest, .milliseconds(5))
        let clock = tickClock
        wakeTask = Task { [weak self] in
            do { try await clock.sleep(for: delay, tolerance: Self.wakeTolerance) } catch { return }
            await self?.wake()
        }
    }

    /// How late a wake-up may come.
    public static let wakeTolerance: Duration = .milliseconds(2)

    private func wake() {
        wakeTask = nil
        if watchForHandover(engine.position) { return }
        followEngineAndCheckPosition()
        scheduleWake()
    }
}
