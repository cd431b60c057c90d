extension Duration {
    /// Whole microseconds, the unit of MPRIS positions and of the library's offsets.
    public var microseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
