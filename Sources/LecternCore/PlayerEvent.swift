import Foundation

/// What the player tells its observers, synchronously, in the order things happened.
public enum PlayerEvent: Sendable, Equatable {
    /// Something in the snapshot changed: the new state (also in ``PlayerView/state`` by now) and the one
    /// published before it.
    case stateChanged(PlayerState, previous: PlayerState)
    /// The position jumped (not by playing): seek, set position, a load at a saved position, a smart
    /// rewind. The new position within the current chapter.
    case seeked(Duration)
    /// Skip silence shortened a pause: the position moved on faster than the rate (not a seek). The new position
    /// within the current chapter, as ``seeked(_:)`` carries it; the time saved is ``PlayerView/silenceSkipped``.
    case silenceSkipped(Duration)
    /// A stop was asked for while this item was at this position (the position then reads 0): where to
    /// resume a book from.
    case stopped(MediaItem, at: Duration)
    /// Playback reached the end of the queue (with loop off): the book is finished.
    case finished
    /// The sleep timer paused playback at this position of this item.
    case sleepTimerFired(MediaItem, at: Duration)
    /// This item, at this index of the queue, could not be played (the engine's message); playback went on with
    /// the next one, if any.
    case itemFailed(MediaItem, index: Int, message: String)
    /// Still playing, at this position of this item: sent at every tick while playing (``Player/tickInterval``),
    /// when the position is worth saving.
    case playing(MediaItem, at: Duration)
    /// Another sound asked for the output (a call), or gave it back, and what the player did about it.
    case interruption(InterruptionNews)
    /// A client moved the listener (a skip, a seek, a chapter, a jump): where they were just before, sent before
    /// the move, when the move is one to undo of its own (not one of a run of skips, see ``UndoRuns``).
    case moving(UndoPoint)
}

/// Hears every ``PlayerEvent``, synchronously, on the player's executor: it must not wait (hand the event on to
/// a stream or another executor for anything slow).
public protocol PlayerObserver: Sendable {
    func handle(_ event: PlayerEvent)
}

/// A stream of the player's events: for an observer that works on its own executor (it reads them in order).
extension AsyncStream.Continuation: PlayerObserver where Element == PlayerEvent {
    public func handle(_ event: PlayerEvent) { yield(event) }
}

/// Why a command was refused. Nothing changed.
public enum PlayerError: Error, Equatable, Sendable, CustomStringConvertible {
    case nothingToPlay
    case invalidValue(String)

    public var description: String {
        switch self {
        case .nothingToPlay: return "nothing is loaded"
        case .invalidValue(let what): return what
        }
    }
}
