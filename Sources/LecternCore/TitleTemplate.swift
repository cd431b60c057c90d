/// How a track's xesam:title is made from its chapter: placeholders {chapter}, {book}, {author}, {file},
/// {n} and {count}; `lecternd --title-template "{chapter} · {book}"`.
public struct TitleTemplate: Sendable, Equatable {
    public var pattern: String
    public init(_ pattern: String = "{chapter}") { self.pattern = pattern }

    public func render(chapter: String, book: String, author: String, file: String, number: Int, count: Int) -> String {
        let values = ["chapter": chapter, "book": book, "author": author, "file": file,
                      "n": String(number), "count": String(count)]
        var result = ""
        var rest = Substring(pattern)
        while let open = rest.firstIndex(of: "{") {
            result += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}"),
                  let value = values[String(rest[rest.index(after: open)..<close])] else {
                result.append("{")
                rest = rest[rest.index(after: open)...]
                continue
            }
            result += value
            rest = rest[rest.index(after: close)...]
        }
        result += rest
        return result.isEmpty ? chapter : result
    }
}
