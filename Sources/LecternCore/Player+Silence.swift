import Foundation

/// What skip silence did, as the tick sees it (Player+Silence.swift).
struct SilenceWatch {
    /// The engine's ``AudioEngine/silenceRemoved`` as last read.
    var removed: Duration = .zero
    /// Listening time the engine removed that the position has not yet shown as a jump.
    var unheard: Duration = .zero
    /// Listening time skipped as the listener heard it: the player's running total (``PlayerView/silenceSkipped``).
    var skipped: Duration = .zero
    /// How far (file time) skipped silence moved the position since clients were last told where it is.
    var untold: Duration = .zero
}

/// Skip silence at the tick: a shortened pause moves the position ahead of what the Rate makes of the time passed,
/// and clients that reckon the position from the Rate (MPRIS's rule; GNOME Shell's media card) must be told
/// (``PlayerEvent/silenceSkipped(_:)``, which MPRIS sends as Seeked).
///
/// The engine counts silence when it drops it; an audio sink that renders ahead (a pulsesink holds 2 s) plays the
/// splice later, and the position jumps only then (docs/decisions/skip-silence.md). So what the engine removed waits
/// as *unheard* until the position runs ahead of the last tick's reckoning, and then explains that jump: it is counted
/// as skipped and told. A move (a seek, a pause, a new file) ends the reckoning; one that flushes the sound ahead (a
/// seek, a load, a speed change) takes what was unheard with it (``forgetUnheardSilence()``): the silence in the sound
/// played again is removed, and counted, again.
extension Player {
    /// How far skipped silence may move the position ahead of clients' reckoning before they are told.
    static let untoldSilenceLimit: Duration = .milliseconds(100)

    /// Before the clock follows the engine: takes in what the engine removed since last looked, and returns where the
    /// clock, running from the engine's position, puts the position now (nil while it stands: after a move).
    func reckonSilence() -> Duration? {
        let total = engine.silenceRemoved
        // A new pipeline counts from zero again.
        silence.unheard += total >= silence.removed ? total - silence.removed : total
        silence.removed = total
        return clock.speed > 0 ? clockPosition : nil
    }

    /// The engine is about to flush the sound ahead of what is heard (a seek, a load, a speed change): the silence it
    /// removed from it is never heard.
    func forgetUnheardSilence() {
        silence.removed = engine.silenceRemoved
        silence.unheard = .zero
        silence.untold = .zero
    }

    /// After the clock followed the engine: the part of its lead on `reckoned` that unheard silence explains is skipped
    /// (published in the view). True when clients must be told where the position is.
    func noteSkippedSilence(reckoned: Duration?) -> Bool {
        let rate = clock.speed
        guard let reckoned, rate > 0, silence.unheard > .zero, clock.anchor > reckoned else { return false }
        let skipped = min(silence.unheard, (clock.anchor - reckoned) / rate)
        silence.unheard -= skipped
        silence.skipped += skipped
        silence.untold += skipped * rate
        view.setSilenceSkipped(silence.skipped)
        guard silence.untold >= Self.untoldSilenceLimit else { return false }
        silence.untold = .zero
        return true
    }
}
