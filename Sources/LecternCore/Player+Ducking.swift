import Foundation

/// The book lowered while a spoken prompt plays over it (``Prompter``): the engine's volume only. The listener's
/// volume (`state.volume`), the position and the sleep timer's count are untouched, and clients see no change.
extension Player {
    /// The share of its volume the book keeps under a prompt: −12 dB, low enough for words over speech.
    public static let duckedVolume = 0.25

    /// Lowers the book (`true`) or brings it back (`false`). Not a listener's command: it cancels no automatic
    /// resume and extends no fading sleep timer.
    public func setDucked(_ ducked: Bool) {
        guard ducked != self.ducked else { return }
        self.ducked = ducked
        setEngineVolume(engineVolume)
    }

    public var isDucked: Bool { ducked }

    /// Every volume the player gives the engine goes through here: lowered while ducked.
    func setEngineVolume(_ volume: Double) {
        engineVolume = volume
        engine.setVolume(ducked ? volume * Self.duckedVolume : volume)
    }
}
