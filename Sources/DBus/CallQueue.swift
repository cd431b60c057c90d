/// Method calls waiting for their handler, one queue per sender, taken round-robin across senders and in arrival
/// order within each sender.
///
/// In one FIFO, a sender that pipelines thousands of calls delays every other client by the whole backlog; here
/// a client waits for at most one call of each other sender with calls waiting. A sender's own calls keep their
/// order (clients rely on it: a Get after a Set sees the Set), and so do their replies. Calls of different senders
/// were never ordered by anything but the bus's timing.
///
/// Not thread-safe: ``CallScheduler`` keeps it in a `Mutex`.
struct CallQueue<Job> {
    /// Calls not taken yet, by sender; a sender without calls has no entry.
    private var waiting: [String: Queue<Job>] = [:]
    /// The senders with calls waiting, in the order of their turns.
    private var turns = Queue<String>()
    /// Calls queued or being handled, by sender (no entry for 0).
    private var unfinished: [String: Int] = [:]
    /// Set once the connection closed: nothing more is queued.
    private(set) var closed = false
    /// Calls queued and not taken yet, of all senders.
    private(set) var count = 0

    /// Queues `job` behind `sender`'s earlier calls; false (and nothing queued) once closed.
    mutating func append(_ job: Job, from sender: String) -> Bool {
        guard !closed else { return false }
        unfinished[sender, default: 0] += 1
        if waiting[sender] == nil {
            waiting[sender] = Queue()
            turns.append(sender)
        }
        waiting[sender]?.append(job)
        count += 1
        return true
    }

    /// The first call of the sender whose turn it is; that sender goes to the back of the turns if it has more.
    /// ``finished(_:)`` must follow once the call has been handled.
    mutating func next() -> (sender: String, job: Job)? {
        guard let sender = turns.removeFirst(), let job = waiting[sender]?.removeFirst() else { return nil }
        count -= 1
        if waiting[sender]?.isEmpty ?? true {
            waiting[sender] = nil
        } else {
            turns.append(sender)
        }
        return (sender, job)
    }

    /// A call of `sender` taken by ``next()`` has been handled.
    mutating func finished(_ sender: String) {
        let count = (unfinished[sender] ?? 0) - 1
        unfinished[sender] = count > 0 ? count : nil
    }

    /// Whether a call of `sender` is queued or being handled: its next call must wait for it.
    func hasUnfinished(_ sender: String) -> Bool { unfinished[sender] != nil }

    /// Refuses further calls; those already queued are still handed out.
    mutating func close() { closed = true }
}

/// A FIFO with O(1) amortised removal at the front (`Array.removeFirst` moves every element).
struct Queue<Element> {
    private var items: [Element?] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }

    mutating func append(_ element: Element) { items.append(element) }

    mutating func removeFirst() -> Element? {
        guard head < items.count else { return nil }
        let first = items[head]
        items[head] = nil  // drop the reference now: a queued call can hold a message of megabytes
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.count <= 1024)
            head = 0
        } else if head >= 1024, head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return first
    }
}
