import Foundation

/// Another sound asking for the output: the sound server's cork request while a call plays (PulseAudio's
/// module-role-cork), and its uncork request after. The engine reports both (``EngineEvent/interruptionBegan``,
/// ``EngineEvent/interruptionEnded``) and changes nothing by itself; the player decides, with the rule of a lost
/// output: it resumes only a pause that was the interruption's doing, with no command since.
extension Player {
    /// Pauses for a cork request while playing (``InterruptionMode/pause``); plays on with `.ignore`, and then, as
    /// when the listener plays during a call, the observers hear `.playingThrough` (the server muted the stream
    /// with its request). Paused or stopped, nothing changes: the uncork will not start playback.
    func interruptionBegan() {
        corkRequested = true
        let pausing = interruptions == .pause && state.status == .playing
        // Told first: the event that explains a change of PlaybackStatus comes before it.
        tell(.interruption(.began(paused: pausing)))
        if pausing {
            pauseNow()
            outputPause = .interrupted
        }
        logger.info("another sound asked for the output", metadata: ["action": "\(pausing ? "paused" : "none")"])
        if state.status == .playing { playingThroughInterruption() }
    }

    /// The other sound gave the output back: the server's uncork request (the engine's
    /// ``EngineEvent/interruptionEnded``), or, as the output watcher sees it, the server unmuting the stream the
    /// pause corked (PulseAudio sends no uncork when the call ended before the stream's cork reached it). Resumes
    /// when the pause was the cork request's, untouched since; the smart rewind applies as after any pause. Said once:
    /// with no request standing and no pause of its own, it does nothing.
    public func interruptionEnded() {
        guard corkRequested || outputPause == .interrupted else { return }
        corkRequested = false
        let resuming = outputPause == .interrupted && state.status == .paused
        tell(.interruption(.ended(resumed: resuming)))
        if resuming { play() }
        logger.info("the other sound gave the output back", metadata: ["action": "\(resuming ? "resumed" : "none")"])
    }

    /// The stream plays while the server's cork request stands: the server muted it with the request (PulseAudio's
    /// module-role-cork does), so the observers hear that the listener means to hear it. Said once per request.
    func playingThroughInterruption() {
        guard corkRequested else { return }
        corkRequested = false
        tell(.interruption(.playingThrough))
    }

    /// What to do when another sound asks for the output, from now on (a reloaded configuration, a client).
    public func setInterruptions(_ mode: InterruptionMode) {
        interruptions = mode
    }

    /// Whether the player plays, or is paused only because another sound asked for the output: what an output
    /// lost now would have to pause (its pause then replaces the interruption's: only the output's return resumes).
    public var isPlayingOrInterrupted: Bool { state.status == .playing || outputPause == .interrupted }

    /// Whether the current pause is the interruption's doing, with no command since.
    public var isPausedForInterruption: Bool { outputPause == .interrupted }
}

/// What Lectern does when another sound asks for the output (a call); the user's choice.
public enum InterruptionMode: String, Sendable, CaseIterable {
    /// Pause while it lasts; resume after, when the pause was its doing and no command came since.
    case pause
    /// Play on (heard: the stream the server muted for the request is unmuted).
    case ignore
}

/// What the player did about another sound asking for the output (``PlayerEvent/interruption(_:)``).
public enum InterruptionNews: Sendable, Equatable {
    /// The sound server asked the stream to make way; `paused`: the player paused for it.
    case began(paused: Bool)
    /// The server said the stream may play again; `resumed`: the player resumed (the pause was the interruption's).
    case ended(resumed: Bool)
    /// The player plays while the server's request stands (interruptions ignored, or the listener played during
    /// the call): the server muted the stream with its request, and the listener means to hear it.
    case playingThrough
}
