# include-cycles.awk - include circles between modules, for scripts/check-source.
# Input: one source path per line (production sources: no tests/, fuzz/ or
# bench/). A module is a .c file and the header of its name in its folder;
# a header without a .c of its own belongs to the module whose name starts
# it (kube_client_int.h to kube_client), else it is a module of its own. A
# quoted include names the header of that name in the includer's folder,
# else the only one of that name. Module A depends on B when a file of A
# includes a header of B; each circle of dependencies is printed once, as
# "a -> b -> a".
function dir_of(p) { return p ~ /\// ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "." }
function base_of(p) { sub(/^.*\//, "", p); return p }
function stem_of(p) { p = base_of(p); sub(/\.[ch]$/, "", p); return p }
function module_of(p,    d, s, best, m) {
  d = dir_of(p); s = stem_of(p)
  if ((d "/" s ".c") in is_file || p ~ /\.c$/) return d "/" s
  best = ""
  for (m in is_c)
    if (dir_of(m) == d && index(s, stem_of(m) "_") == 1 && length(m) > length(best)) best = m
  return best != "" ? dir_of(best) "/" stem_of(best) : d "/" s
}
function visit(m, path,    n, i, w, parts, cyc) {
  state[m] = 1
  n = split(deps[m], parts, " ")
  for (i = 1; i <= n; i++) {
    w = parts[i]
    if (w == "") continue
    if (state[w] == 1) {
      cyc = substr(path " " m, index(" " path " " m " ", " " w " ")) " " w
      gsub(/ /, " -> ", cyc)
      if (!(cyc in said)) { said[cyc] = 1; print cyc }
    } else if (state[w] == 0) {
      visit(w, path " " m)
    }
  }
  state[m] = 2
}
{ files[++nf] = $0; is_file[$0] = 1; if ($0 ~ /\.c$/) is_c[$0] = 1
  b = base_of($0); named[b] = (b in named) ? named[b] " " $0 : $0 }
END {
  for (i = 1; i <= nf; i++) {
    f = files[i]; from = module_of(f)
    while ((getline line < f) > 0) {
      if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
      h = line; sub(/^[^"]*"/, "", h); sub(/".*$/, "", h)
      t = dir_of(f) "/" h
      if (!(t in is_file)) {
        if (!(h in named) || named[h] ~ / /) continue
        t = named[h]
      }
      to = module_of(t)
      if (to == from || index(" " deps[from] " ", " " to " ")) continue
      deps[from] = deps[from] " " to
      mods[from] = 1; mods[to] = 1
    }
    close(f)
  }
  for (m in mods) if (!state[m]) visit(m, "")
}
