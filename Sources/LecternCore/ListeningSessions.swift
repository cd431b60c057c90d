import Foundation

/// A stretch of listening to one book at one speed, as the history keeps it.
public struct ListeningSession: Sendable, Equatable {
    /// The store's id for it; nil until it is first stored.
    public var id: Int64?
    public var bookID: Int64
    /// Wall-clock time of its first and last moments heard.
    public var started: Date
    public var ended: Date
    /// The stretch of the book heard, as book positions (from the start of the book, in book order).
    public var from: Duration
    public var to: Duration
    /// Time spent listening (wall-clock time while playing).
    public var listened: Duration
    /// Book time heard: at a speed above 1, more than `listened`.
    public var content: Duration
    public var rate: Double
    /// Listening time skip silence saved: what the pauses heard lost. The speed saved the rest of `content`'s lead
    /// on `listened`.
    public var silence: Duration = .zero
}

/// Turns the player's events into listening sessions (``ListeningSession``): what to store, and when.
///
/// - A session begins when a book starts playing, and grows at each of the player's ticks while it plays (the
///   position save's moment: a crash loses at most the time since the last tick).
/// - It ends when playback pauses or stops, the book changes, the speed changes, or a seek or jump lands more than
///   ``farJump`` away; a nearer seek (hearing a sentence again) stays in it.
/// - Playing again within ``mergeWithin`` of its end, at the same speed, within ``mergeDistance`` of where it ended
///   (the smart rewind goes back up to 30 s), continues the same session: a pause to answer the door is not two.
/// - `content` counts the book time played from tick to tick (not what a seek skipped); `listened` is that time at
///   the speed (content ÷ speed): the time spent hearing it, without the moments the stream was loading or stalled,
///   or the machine asleep. Between the last tick and a seek, the time since the tick (at most ``longestTick``) is
///   counted as heard; a move a client makes tells the place it left, which is counted exactly.
/// - Skip silence moves the position on faster than the speed: the time it removed between two ticks (the growth of
///   the player's total, ``PlayerView/silenceSkipped``) is `silence`, not `listened` (content ÷ speed, less it), and a
///   tick whose move it explains is no implausible jump.
public struct SessionTracker: Sendable {
    public static let farJump: Duration = .seconds(300)
    public static let mergeWithin: TimeInterval = 300
    public static let mergeDistance: Duration = .seconds(60)
    static let longestTick: TimeInterval = 1

    /// The session being listened to.
    public private(set) var open: ListeningSession?
    /// The last one to end, which playing again may continue.
    private var ended: ListeningSession?
    /// The player's state as last published: the queue, for book positions.
    private var state = PlayerState()
    /// The book position, moment and skipped-silence total of the last tick heard while playing.
    private var last: (position: Duration, at: Date, silence: Duration)?

    public init() {}

    /// Hands the tracker one of the player's events; `filePosition` is the position in the current file as clients
    /// see it at that moment (the player's view), `silence` the listening time skip silence saved so far (a running
    /// total, ``PlayerView/silenceSkipped``: one that goes down starts again from there), `now` the wall-clock time.
    /// Returns the sessions to store, in order:
    /// a new one has no id yet (``assign(id:to:)``), the others replace the stored rows with their ids. A session is
    /// stored once something was heard in it (playing then pausing at once, or changing the speed, leaves none).
    public mutating func handle(_ event: PlayerEvent, filePosition: Duration, silence: Duration, now: Date) -> [ListeningSession] {
        let writes = changes(event, filePosition: filePosition, now: Moment(at: now, silence: silence))
        return writes.filter { $0.id != nil || $0.content > .zero }
    }

    /// The moment of an event: the wall-clock time and the skipped-silence total.
    private struct Moment {
        var at: Date
        var silence: Duration
    }

    private mutating func changes(_ event: PlayerEvent, filePosition: Duration, now: Moment) -> [ListeningSession] {
        switch event {
        case .stateChanged(let new, _):
            let old = state
            state = new
            var writes: [ListeningSession] = []
            let sameStretch = new.status == .playing && new.queueID == old.queueID && new.rate == old.rate
            if open != nil, !sameStretch {
                if new.queueID == old.queueID, let position = bookPosition(of: new.current, at: filePosition) {
                    advance(to: position, at: now)
                }
                writes += close()
            }
            if new.status == .playing, open == nil, case .book(let book) = new.queueID,
               let position = bookPosition(of: new.current, at: filePosition) {
                writes.append(begin(book, at: position, rate: new.rate, now: now))
            }
            return writes
        case .playing(let item, let position):
            guard open != nil, let position = bookPosition(of: item, at: position) else { return [] }
            advance(to: position, at: now)
            return open.map { [$0] } ?? []
        case .moving(let point):
            // The place left, before the seek that follows: what was heard up to it.
            guard open != nil, point.queueID == state.queueID, let position = bookPosition(of: point.item, at: point.position) else { return [] }
            advance(to: position, at: now)
            return []
        case .seeked:
            guard var session = open, let last, let position = bookPosition(of: state.current, at: filePosition) else { return [] }
            // It played until the seek: heard at the speed (the position reached is not known, nor a pause skipped).
            let played = min(max(0, now.at.timeIntervalSince(last.at)), Self.longestTick)
            session.listened += .seconds(played)
            session.content += .seconds(played * session.rate)
            session.to = max(session.to, last.position + .seconds(played * session.rate))
            session.ended = now.at
            open = session
            guard Self.distance(position, last.position) > Self.farJump, case .book(let book) = state.queueID else {
                self.last = (position, now.at, now.silence)
                return []
            }
            return close() + [begin(book, at: position, rate: state.rate, now: now, merging: false)]
        case .stopped, .finished, .sleepTimerFired, .itemFailed, .interruption, .silenceSkipped:
            return []  // a skipped silence is counted at the tick that follows it
        }
    }

    /// The store's id for `session`, just stored as new (the open one, or the last ended, which playing again may
    /// continue).
    public mutating func assign(id: Int64, to session: ListeningSession) {
        func isIt(_ other: ListeningSession?) -> Bool { other?.id == nil && other?.bookID == session.bookID && other?.started == session.started }
        if isIt(open) { open?.id = id }
        if isIt(ended) { ended?.id = id }
    }

    private mutating func begin(_ book: Int64, at position: Duration, rate: Double, now: Moment, merging: Bool = true) -> ListeningSession {
        last = (position, now.at, now.silence)
        if merging, var previous = ended, previous.bookID == book, previous.rate == rate,
           now.at.timeIntervalSince(previous.ended) <= Self.mergeWithin, Self.distance(position, previous.to) <= Self.mergeDistance {
            previous.from = min(previous.from, position)
            previous.ended = now.at
            open = previous
            ended = nil
            return previous
        }
        let session = ListeningSession(id: nil, bookID: book, started: now.at, ended: now.at, from: position, to: position,
                                       listened: .zero, content: .zero, rate: rate)
        open = session
        return session
    }

    private mutating func close() -> [ListeningSession] {
        guard let session = open else { return [] }
        ended = session
        open = nil
        last = nil
        return [session]
    }

    /// Counts what was heard between the last tick and `position` at `now`: a move further than twice what the wall
    /// time and the skipped silence explain (and 2 s) is no playing (a seek not told, a clock gone wrong).
    private mutating func advance(to position: Duration, at now: Moment) {
        guard var session = open, let last else { return }
        let wall = Duration.seconds(max(0, now.at.timeIntervalSince(last.at)))
        let skipped = now.silence >= last.silence ? now.silence - last.silence : .zero
        let moved = position - last.position
        let plausible = moved >= .zero && moved <= (wall + skipped) * session.rate * 2 + .seconds(2)
        if plausible {
            session.content += moved
            session.listened += max(.zero, moved / session.rate - skipped)
            session.silence += skipped
            session.from = min(session.from, last.position)
            session.to = max(session.to, position)
        }
        session.ended = now.at
        open = session
        self.last = (position, now.at, now.silence)
    }

    static func distance(_ a: Duration, _ b: Duration) -> Duration { a > b ? a - b : b - a }

    /// `position` in `item` (of the current queue) as a book position: the durations of the files before it in book
    /// order, then the position.
    private func bookPosition(of item: MediaItem?, at position: Duration) -> Duration? {
        guard let item, let index = state.queue.firstIndex(where: { $0.id == item.id }) else { return nil }
        return state.queue[..<index].reduce(max(.zero, position)) { $0 + ($1.duration ?? .zero) }
    }
}
