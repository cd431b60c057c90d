import DBus
import Foundation
import LecternBooks
import LecternLibrary

// org.lectern.History1, the face: undo, the listening history and its statistics. Times are µs since the epoch,
// durations and positions µs; 0 means "no bound" for a span and "the current book" for a book.
extension LibraryService {
    static let historyInterface = "org.lectern.History1"

    func historyInterfaceDeclaration(_ rules: LibraryRules) -> Interface {
        let dict = DBusType.dictionary(key: .string, value: .variant)
        return Interface(Self.historyInterface,
            methods: [
                method("Undo", out: [("place", dict)]) { _ in
                    [Self.encode(try await rules.session.undo())]
                },
                method("ListUndo", in: [("book", .int64)], out: [("places", .array(dict))]) { call in
                    let book = try await rules.bookOrCurrent(call.argument(0))
                    return [.array(dict, try await self.library.reading { try $0.undoEntries(of: book) }.map(Self.encode))]
                },
                deferred("ListSessions", in: [("book", .int64), ("from", .int64), ("to", .int64)], out: [("sessions", .array(dict))]) { call, library in
                    let (book, from, to) = try call.arguments(Int64.self, Int64.self, Int64.self)
                    let span = try Self.span(from, to)
                    return [.array(dict, try library.sessions(of: Self.optionalID(book), from: span.from, to: span.to).map(Self.encode))]
                },
                deferred("GetStats", in: [("from", .int64), ("to", .int64)], out: [("stats", dict)]) { call, library in
                    let (from, to) = try call.arguments(Int64.self, Int64.self)
                    let span = try Self.span(from, to)
                    return [Self.encode(try library.listeningStats(from: span.from, to: span.to))]
                },
            ])
    }

    /// `from ..< to` in µs since the epoch, 0 for no bound; refused when negative or empty.
    static func span(_ from: Int64, _ to: Int64) throws -> (from: Date?, to: Date?) {
        guard from >= 0, to >= 0 else {
            throw LibraryError.invalidArgument("from and to are µs since the epoch (0: no bound), not negative: \(from), \(to)")
        }
        guard to == 0 || to > from else { throw LibraryError.invalidArgument("to (\(to)) must be after from (\(from))") }
        func date(_ us: Int64) -> Date? { us == 0 ? nil : Date(timeIntervalSince1970: Double(us) / 1_000_000) }
        return (date(from), date(to))
    }

    static func encode(_ entry: UndoEntry) -> DBusValue {
        .vardict(["id": .int64(entry.id), "book": .int64(entry.placeBookId), "file": .int64(entry.fileId),
                  "offset": .int64(entry.offset), "kind": .string(entry.kind), "created": time(entry.createdAt)])
    }

    static func encode(_ session: ListenedSession) -> DBusValue {
        .vardict(["id": .int64(session.id ?? 0), "book": .int64(session.bookId ?? 0), "title": .string(session.title),
                  "started": time(session.startedAt), "ended": time(session.endedAt), "from": .int64(session.fromPosition),
                  "to": .int64(session.toPosition), "listened": .int64(session.listened), "content": .int64(session.content),
                  "speed": .double(session.speed), "silence": .int64(session.silence)])
    }

    static func encode(_ stats: ListeningStats) -> DBusValue {
        let dict = DBusType.dictionary(key: .string, value: .variant)
        func totals(_ totals: [ListeningStats.Total], id: String) -> DBusValue {
            .array(dict, totals.map { total in
                var entry: [String: DBusValue] = ["listened": .int64(total.listened), "content": .int64(total.content),
                                                  "silence": .int64(total.silence)]
                if id == "day" {
                    entry["day"] = .string(total.key)
                } else {
                    entry[id] = .int64(total.id ?? 0)
                    entry["name"] = .string(total.name)
                }
                return .vardict(entry)
            })
        }
        return .vardict([
            "listened": .int64(stats.listened), "content": .int64(stats.content), "savedBySpeed": .int64(stats.savedBySpeed),
            "savedBySilence": .int64(stats.savedBySilence),
            "days": totals(stats.days, id: "day"), "books": totals(stats.books, id: "book"),
            "shelves": totals(stats.shelves, id: "shelf"),
            "finished": .array(dict, stats.finished.map { finished in
                .vardict(["book": .int64(finished.bookId ?? 0), "title": .string(finished.title), "finished": time(finished.finishedAt)])
            }),
        ])
    }
}
