import DBus
import Foundation
import LecternClient

/// What `--json` prints: objects with sorted keys, times as lecternd gives them unless the command says otherwise.
enum JSON {
    /// A listed book, under the names of GetBook's keys.
    static func book(_ book: ListedBook) -> [String: Any] {
        ["id": book.id, "shelf": book.shelf, "title": book.title, "author": book.author, "narrator": book.narrator,
         "cover": book.cover, "source": book.source, "state": book.state, "files": Int64(book.files),
         "missing": Int64(book.missing), "duration": book.duration, "position_file": book.positionFile,
         "position_offset": book.positionOffset, "finished": book.finished, "added": book.added, "modified": book.modified,
         "last_played": book.lastPlayed]
    }

    /// A reply as lecternd gave it, every key, also those this lectern does not read: an `a{sv}` as an object.
    static func whole(_ reply: DBusValue) -> Any { value(reply) }

    private static func value(_ v: DBusValue) -> Any {
        switch v.unwrapped {
        case .string(let s): return s
        case .boolean(let b): return b
        case .double(let d): return d.isFinite ? d : 0
        case .objectPath(let p): return p.rawValue
        case .array(_, let items): return items.map(value)
        case .dictionary(_, _, let entries):
            var out: [String: Any] = [:]
            for entry in entries { out[entry.key.string ?? "\(entry.key)"] = value(entry.value) }
            return out
        case .structure(let fields): return fields.map(value)
        default: return v.int64 ?? "\(v)"
        }
    }

    /// `object` as one line of JSON; `orElse` if it cannot be (a value JSON has no form for).
    static func encode(_ object: Any, orElse fallback: String = "null") -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data(fallback.utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
