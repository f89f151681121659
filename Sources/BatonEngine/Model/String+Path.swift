/// File path text, as NSString's path methods read it: `/` separated, trailing slashes ignored.
extension StringProtocol {
    /// The path without its last component: `/a/b` → `/a`, `/a` → `/`, `/` → `/`, `a` → ``.
    public var parentPath: String {
        let path = trimmingTrailingSlashes
        if path.isEmpty { return isEmpty ? "" : "/" }
        guard let slash = path.lastIndex(of: "/") else { return "" }
        let parent = path[..<slash].trimmingTrailingSlashes
        return parent.isEmpty && path.first == "/" ? "/" : String(parent)
    }

    /// The last component of the path: `/a/b/` → `b`, `/` → `/`.
    public var baseName: String {
        let path = trimmingTrailingSlashes
        if path.isEmpty { return isEmpty ? "" : "/" }
        return String(path[(path.lastIndex(of: "/").map(path.index(after:)) ?? path.startIndex)...])
    }

    private var trimmingTrailingSlashes: SubSequence {
        var end = endIndex
        while end > startIndex, self[index(before: end)] == "/" { end = index(before: end) }
        return self[..<end]
    }
}
