import Foundation

/// One chapter of the queue: a chapter of a file, or the whole file when it has no chapter marks.
/// Next and Previous step through these; MPRIS calls them tracks (`TrackList.Tracks`).
public struct Chapter: Sendable, Equatable {
    /// The file, as an index into the queue (book order).
    public var itemIndex: Int
    public var title: String
    /// Where the chapter starts and ends within its file; `end` is nil while the file's duration is unknown.
    public var start: Duration
    public var end: Duration?
    /// The words heard in it (``Lyrics/text(from:to:)``): its part of its file's synced lyrics or transcript, or
    /// all of an unsynced text; nil when it has none.
    public var text: String?

    public init(itemIndex: Int, title: String, start: Duration, end: Duration?, text: String? = nil) {
        self.itemIndex = itemIndex
        self.title = title
        self.start = start
        self.end = end
        self.text = text
    }

    public var length: Duration? { end.map { max(.zero, $0 - start) } }

    /// The chapters of a queue, file after file in queue order. Chapter marks are sorted; marks at or past
    /// the end of the file and repeated starts are dropped; the first chapter of a file starts at 0, so
    /// every position of a file is in exactly one chapter.
    public static func chapters(of queue: [MediaItem]) -> [Chapter] {
        var chapters: [Chapter] = []
        for (index, item) in queue.enumerated() {
            var marks = item.chapters.sorted { $0.start < $1.start }
            if let duration = item.duration { marks.removeAll { $0.start >= duration } }
            var starts: [ChapterMark] = []
            for mark in marks where mark.start >= .zero && mark.start != starts.last?.start { starts.append(mark) }
            if starts.isEmpty { starts = [ChapterMark(title: item.displayTitle, start: .zero)] }
            starts[0].start = .zero
            for (n, mark) in starts.enumerated() {
                let end = n + 1 < starts.count ? starts[n + 1].start : item.duration
                chapters.append(Chapter(itemIndex: index, title: mark.title, start: mark.start, end: end,
                                        text: item.lyrics?.text(from: mark.start, to: n + 1 < starts.count ? end : nil)))
            }
        }
        return chapters
    }
}

/// Where the listener is, in the file, the chapter and the whole book: what `lectern status` shows.
public struct BookProgress: Sendable, Equatable {
    public var fileIndex: Int
    public var fileCount: Int
    public var filePosition: Duration
    public var fileLength: Duration?
    public var chapterIndex: Int
    public var chapterCount: Int
    public var chapterTitle: String
    public var chapterPosition: Duration
    public var chapterLength: Duration?
    /// Time into the book in book order (the files before this one in the book, then the position in it), shuffled
    /// or not: file 1 at 0:10 is always 0:10 into the book.
    public var bookPosition: Duration
    /// The sum of the durations known so far.
    public var bookLength: Duration
    /// What is left to hear, in listening time at the current rate: the rest of this file and the files after it in
    /// play order (shuffled: those not played yet, whatever their place in the book), without their skipped intros
    /// and outros.
    public var remaining: Duration
    public var rate: Double
    /// What is left to hear of the chapter, in listening time at the current rate (to where it stops playing: before
    /// its file's outro when skipped); nil while its end is unknown.
    public var chapterRemaining: Duration?
}

extension PlayerState {
    /// The chapter that holds `position` of the current file.
    public func chapterIndex(atFilePosition position: Duration) -> Int? {
        guard let item = currentIndex else { return nil }
        var found: Int?
        for (index, chapter) in chapters.enumerated() where chapter.itemIndex == item {
            if found == nil || chapter.start <= position { found = index } else { break }
        }
        return found
    }

    /// The queue indices in play order.
    public var playOrder: [Int] { shuffleOrder ?? Array(queue.indices) }

    /// The figures for `filePosition` in the current file; nil with nothing current.
    public func progress(atFilePosition filePosition: Duration) -> BookProgress? {
        guard let current = currentIndex else { return nil }
        let chapter = currentChapter.flatMap { chapters.indices.contains($0) ? $0 : nil } ?? chapterIndex(atFilePosition: filePosition)
        return chapter.map { progress(ofChapter: $0, atFilePosition: filePosition, item: current) }
    }

    /// The figures at the start of chapter `index` (any chapter of the queue); the time left from where it starts
    /// playing (after its file's skipped intro).
    public func progress(ofChapter index: Int) -> BookProgress {
        progress(ofChapter: index, atFilePosition: chapters[index].start, item: chapters[index].itemIndex,
                 heardFrom: entry(ofChapter: index))
    }

    /// In whole microseconds (the unit clients see), so that a duration refined below a microsecond changes no figure.
    /// `heardFrom`: where in the file the time left counts from, when not `filePosition`.
    private func progress(ofChapter index: Int, atFilePosition filePosition: Duration, item: Int,
                          heardFrom: Duration? = nil) -> BookProgress {
        let chapter = chapters[index]
        func us(_ duration: Duration?) -> Int64 { duration?.microseconds ?? 0 }
        let before = queue[..<item].reduce(Int64(0)) { $0 + us($1.duration) }
        let length = queue.reduce(Int64(0)) { $0 + us($1.duration) }
        let position = max(0, us(filePosition))
        let bookPosition = before + position
        var chapterPosition = max(0, position - us(chapter.start))
        if let chapterLength = chapter.length { chapterPosition = min(chapterPosition, us(chapterLength)) }
        let after = playOrder.drop { $0 != item }.dropFirst().reduce(Int64(0)) {
            $0 + us(skip.playedLength(ofFileLasting: queue[$1].duration))
        }
        let heard = heardFrom.map { max(position, us($0)) } ?? position
        let toHear = max(0, us(fileEnd(ofItem: item)) - heard) + after
        let speed = max(rate, PlayerState.minimumRate)
        let remaining = Double(toHear) / speed
        let chapterRemaining = playedEnd(ofChapter: index).map { Double(max(0, us($0) - heard)) / speed }
        return BookProgress(fileIndex: item, fileCount: queue.count, filePosition: .microseconds(position),
                            fileLength: queue[item].duration, chapterIndex: index, chapterCount: chapters.count,
                            chapterTitle: chapter.title, chapterPosition: .microseconds(chapterPosition), chapterLength: chapter.length,
                            bookPosition: .microseconds(bookPosition), bookLength: .microseconds(length),
                            remaining: .microseconds(Int64(remaining.rounded(.down))), rate: rate,
                            chapterRemaining: chapterRemaining.map { .microseconds(Int64($0.rounded(.down))) })
    }
}
