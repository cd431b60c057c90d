/// The order the queue's files play in and where the player is in it: queue order, or shuffled with the current
/// file first; and the files that failed as the gapless next one, which are not offered as the next one again.
///
/// ```swift
/// var order = PlayOrder.shuffled(count: 5, first: 2)   // [2, ...]: turning shuffle on keeps the current file
/// order.next(wrapping: false)                          // 1: the position after the current one
/// order[1]                                             // the queue index played second
/// ```
/// Positions are indices into the play order; queue indices are indices into the player's queue.
struct PlayOrder: Equatable {
    /// Queue indices in play order.
    private(set) var queueIndices: [Int] = []
    /// The position of the current file.
    var position = 0
    /// Whether the order is a shuffled one (the one clients see as ``PlayerState/shuffleOrder``).
    private(set) var isShuffled = false
    /// Queue indices of files that failed as the gapless next one.
    var failed: Set<Int> = []

    /// The queue's own order, at `current`.
    static func queueOrder(count: Int, at current: Int) -> PlayOrder {
        PlayOrder(queueIndices: Array(0..<count), position: current, isShuffled: false)
    }

    /// A new shuffled order with `current` first.
    static func shuffled(count: Int, first current: Int) -> PlayOrder {
        PlayOrder(queueIndices: [current] + (0..<count).filter { $0 != current }.shuffled(), position: 0, isShuffled: true)
    }

    /// A shuffled order kept from before (a book's, as saved), at `current`; nil unless it is a permutation of
    /// the queue's indices.
    static func shuffled(keeping permutation: [Int], count: Int, at current: Int) -> PlayOrder? {
        guard permutation.sorted() == Array(0..<count) else { return nil }
        return PlayOrder(queueIndices: permutation, position: permutation.firstIndex(of: current) ?? 0, isShuffled: true)
    }

    var count: Int { queueIndices.count }
    var isEmpty: Bool { queueIndices.isEmpty }

    /// The queue index at a position.
    subscript(position: Int) -> Int { queueIndices[position] }

    /// The position of a queue index.
    func position(of queueIndex: Int) -> Int? { queueIndices.firstIndex(of: queueIndex) }

    /// The next position; `wrapping` past the end to the start; with `skippingFailed`, past files that failed as
    /// the next one (the current one aside).
    func next(wrapping: Bool, skippingFailed: Bool = false) -> Int? {
        guard !isEmpty else { return nil }
        var next = position
        for _ in queueIndices.indices {
            if next + 1 < count {
                next += 1
            } else if wrapping {
                next = 0
            } else {
                return nil
            }
            if !skippingFailed || next == position || !failed.contains(queueIndices[next]) {
                return next
            }
        }
        return nil
    }

    /// The previous position; `wrapping` before the start to the end.
    func previous(wrapping: Bool) -> Int? {
        guard !isEmpty else { return nil }
        if position > 0 { return position - 1 }
        return wrapping ? count - 1 : nil
    }
}
