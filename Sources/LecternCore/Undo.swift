import Foundation

/// What moved the listener away from where they were: the moves an undo returns from.
public enum MoveKind: String, Sendable, Equatable, CaseIterable {
    /// A skip, a relative seek, or a position set by a client (a seek bar dragged).
    case seek
    /// Next, Previous, or a chapter chosen by its number.
    case chapter
    /// A jump to a file of the queue and a position in it.
    case jump
    /// A jump to a bookmark.
    case bookmark
    /// Another book made current (the daemon's book session notes these).
    case book
    /// A stop, which returns to the start of the chapter.
    case stop

    /// Whether moves of this kind made in quick succession are one move to undo (see ``UndoRuns``).
    var joinsRuns: Bool { self == .seek || self == .chapter }
}

/// Where the listener was just before a move: what an undo returns to.
public struct UndoPoint: Sendable, Equatable {
    /// The queue the listener was in (a book's, or files opened otherwise).
    public var queueID: QueueID?
    /// The file they were in.
    public var item: MediaItem
    /// Where they were in it.
    public var position: Duration
    public var kind: MoveKind

    public init(queueID: QueueID?, item: MediaItem, position: Duration, kind: MoveKind) {
        self.queueID = queueID
        self.item = item
        self.position = position
        self.kind = kind
    }
}

/// Which moves start an undo entry and which join the one before. A seek or a chapter step made within ``window``
/// of the move before it, of the same kind, continues that run: "back 30 s" pressed three times, or Next pressed
/// until the right chapter comes, is one move, and one undo returns to before its first press. Each move of the run
/// starts the window again. Jumps, bookmark jumps and book changes are deliberate: each is an entry of its own. An
/// undo ends any run (``reset()``): a skip after it is a new entry.
public struct UndoRuns: Sendable {
    /// How close together moves of a run are.
    public static let window: Duration = .seconds(10)

    private var last: (kind: MoveKind, at: Duration)?

    public init() {}

    /// Notes a move of `kind` at `now` (any steady clock); returns whether it starts a new undo entry.
    public mutating func startsEntry(_ kind: MoveKind, at now: Duration) -> Bool {
        defer { last = (kind, now) }
        guard kind.joinsRuns, let last, last.kind == kind, now - last.at <= Self.window else { return true }
        return false
    }

    /// Ends the current run.
    public mutating func reset() { last = nil }
}
