#include "passes/Permutation.h"

#include <algorithm>
#include <numeric>

namespace friction {

Perm permOf(const Node& transpose, size_t rank) {
  Perm reversed(rank);
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  return transpose.attrInts("perm", reversed);
}

Perm composePerms(const Perm& p, const Perm& q) {
  Perm r(q.size());
  for (size_t i = 0; i < q.size(); ++i) r[i] = p[size_t(q[i])];
  return r;
}

Perm invertPerm(const Perm& p) {
  Perm r(p.size());
  for (size_t i = 0; i < p.size(); ++i) r[size_t(p[i])] = int64_t(i);
  return r;
}

bool isIdentityPerm(const Perm& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != int64_t(i)) return false;
  return true;
}

bool keepsMemoryOrder(const std::vector<int64_t>& xDims, const Perm& p) {
  int64_t last = -1;
  for (int64_t d : p) {
    if (xDims[size_t(d)] == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

bool isReshapingTranspose(const Node& n) {
  if (n.op() != "Transpose" || !n.input(0)->shape().isStatic() || !n.output(0)->shape().isStatic()) return false;
  std::vector<int64_t> x = n.input(0)->shape().staticDims();
  Perm p = permOf(n, x.size());
  return p.size() == x.size() && keepsMemoryOrder(x, p);
}

std::optional<TransposedReshape> reshapeThroughTranspose(const std::vector<int64_t>& xDims, const Perm& p,
                                                         const std::vector<int64_t>& zDims) {
  if (p.size() != xDims.size()) return std::nullopt;
  for (int64_t d : xDims)
    if (d <= 0) return std::nullopt;
  for (int64_t d : zDims)
    if (d <= 0) return std::nullopt;
  // The non-unit dims of y = Transpose(x, p) (as x's dims) and of z, cut into
  // the smallest runs with equal products: the groups the reshape merges or splits.
  std::vector<int64_t> ys;
  std::vector<size_t> zs;
  for (int64_t d : p)
    if (xDims[size_t(d)] != 1) ys.push_back(d);
  for (size_t k = 0; k < zDims.size(); ++k)
    if (zDims[k] != 1) zs.push_back(k);
  struct Group {
    std::vector<int64_t> sources;  // x's dims, in y's order
    std::vector<size_t> zs;
  };
  std::vector<Group> groups;
  size_t i = 0, k = 0;
  while (i < ys.size() || k < zs.size()) {
    Group g;
    int64_t py = 1, pz = 1;
    do {
      if (py <= pz) {
        if (i == ys.size()) return std::nullopt;
        py *= xDims[size_t(ys[i])];
        g.sources.push_back(ys[i++]);
      } else {
        if (k == zs.size()) return std::nullopt;
        pz *= zDims[zs[k]];
        g.zs.push_back(zs[k++]);
      }
    } while (py != pz);
    groups.push_back(std::move(g));
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& l, const Group& r) {
    return *std::min_element(l.sources.begin(), l.sources.end()) < *std::min_element(r.sources.begin(), r.sources.end());
  });
  TransposedReshape r;
  r.a.assign(zDims.size(), 0);
  for (size_t d = 0; d < xDims.size(); ++d)
    if (xDims[d] == 1) r.b.push_back(int64_t(d));
  for (size_t z = 0; z < zDims.size(); ++z)
    if (zDims[z] == 1) r.a[z] = int64_t(r.u.size()), r.u.push_back(1);
  for (const Group& g : groups) {
    r.b.insert(r.b.end(), g.sources.begin(), g.sources.end());
    for (size_t z : g.zs) r.a[z] = int64_t(r.u.size()), r.u.push_back(zDims[z]);
  }
  return r;
}

}  // namespace friction
