"""Hand-written vocabulary the WebShop-lite catalog is generated from.

Ten top-level categories, three departments each, three product types per
department: 90 product types, each with a price range. A department lists the
attributes its products can have and the option kinds they offer; option kinds
share value pools across departments.

Pools are chosen so that no two values of one pool match each other under the
reward's fuzzy rule (token-set ratio > 85) and no attribute is a substring of
another attribute of its department; ``tests/envs/test_webshop.py`` checks both.
Numbers are spelled out ("pack of three") because digit variants such as "pack of
2" and "pack of 3" are fuzzy matches of each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

# Option kind -> values a product can offer.
OPTION_VALUES: dict[str, tuple[str, ...]] = {
    "flavor": ("vanilla", "cherry", "peppermint", "coconut", "strawberry", "honey",
               "mango", "watermelon", "chocolate", "lemon"),
    "scent": ("lavender", "citrus", "rose", "eucalyptus", "sandalwood", "jasmine",
              "vetiver", "ocean breeze"),
    "color": ("black", "white", "navy", "red", "green", "grey", "pink", "beige",
              "purple", "yellow", "orange", "brown"),
    "size": ("xs", "small", "medium", "large", "xl", "xxl"),
    "shoe size": ("size six", "size seven", "size eight", "size nine", "size ten",
                  "size twelve"),
    "pack": ("single pack", "pack of two", "pack of three", "pack of four",
             "pack of six", "pack of eight"),
    "bottle": ("small bottle", "medium bottle", "large bottle", "refill pouch"),
    "jar": ("small jar", "medium jar", "large jar", "family jar"),
    "volume": ("half ounce", "one ounce", "two ounce", "four ounce"),
    "capacity": ("half liter", "one liter", "two liter"),
    "diameter": ("eight inch", "ten inch", "twelve inch"),
    "bed size": ("twin", "full", "queen", "king"),
    "length": ("twenty feet", "fifty feet", "seventy feet", "hundred feet"),
    "device": ("iphone 15", "galaxy s24", "pixel 8", "moto g"),
    "breed size": ("toy breed", "small breed", "medium breed", "large breed"),
    "weight": ("two pounds", "five pounds", "eight pounds", "fifteen pounds"),
    "paper size": ("letter size", "legal size", "a4"),
    "set": ("starter set", "classic set", "deluxe set", "travel set"),
    "tip": ("fine tip", "medium tip", "bold tip"),
}  # fmt: skip

# How an instruction names a chosen value of each option kind ("{}" = value).
OPTION_PHRASES: dict[str, str] = {
    "flavor": "{} flavor", "scent": "{} scent", "color": "{} color",
    "size": "size {}", "shoe size": "{}", "pack": "{}", "bottle": "{}",
    "jar": "{}", "volume": "{}", "capacity": "{}", "diameter": "{}",
    "bed size": "{} size", "length": "{}", "device": "for {}", "breed size": "{}",
    "weight": "{}", "paper size": "{}", "set": "{}", "tip": "{}",
}  # fmt: skip

# (category, department, attributes, option kinds, "noun:low-high" price ranges)
# fmt: off
_DEPARTMENTS: tuple[tuple[str, str, str, str, str], ...] = (
    ("beauty", "lip care",
     "long lasting, cruelty free, paraben free, moisturizing, vegan, "
     "travel friendly, shea butter, sun protection, tinted, non sticky, "
     "beeswax formula, allergy tested",
     "flavor, pack", "lip balm:3-15, lip gloss:5-25, lip scrub:6-20"),
    ("beauty", "hair care",
     "sulfate free, color safe, anti frizz, volumizing, cruelty free, "
     "salon quality, argan oil, silicone free, dandruff control, "
     "heat protection, curl defining, paraben free",
     "scent, bottle", "shampoo:6-40, conditioner:6-40, hair oil:8-45"),
    ("beauty", "skin care",
     "oil free, anti aging, hyaluronic acid, non greasy, fragrance free, "
     "dermatologist tested, vitamin c, hypoallergenic, non comedogenic, "
     "retinol, spf protection, fast absorbing",
     "volume, pack", "face moisturizer:9-60, face serum:10-70, eye cream:10-65"),
    ("grocery", "snacks",
     "gluten free, non gmo, high protein, low sugar, kosher, "
     "individually wrapped, keto friendly, whole grain, dairy free, nut free, "
     "baked not fried, resealable bag",
     "flavor, pack", "trail mix:5-30, granola bar:4-25, rice crackers:3-20"),
    ("grocery", "beverages",
     "organic, caffeine free, sugar free, fair trade, non gmo, zero calorie, "
     "kosher, recyclable packaging, naturally flavored, unsweetened, "
     "electrolytes added, single origin",
     "flavor, pack", "green tea:4-25, cold brew coffee:6-35, sparkling water:5-30"),
    ("grocery", "pantry",
     "organic, gluten free, no added sugar, vegan, non gmo, kosher, low sodium, "
     "cold pressed, no preservatives, small batch, imported from italy, "
     "shelf stable",
     "jar, pack", "olive oil:8-40, pasta sauce:4-20, peanut butter:4-22"),
    ("electronics", "audio",
     "noise cancelling, water resistant, long battery life, fast charging, "
     "built in microphone, bass boost, lightweight, touch control, "
     "foldable design, hands free calls, low latency, stereo sound",
     "color",
     "wireless earbuds:20-150, bluetooth speaker:20-180, over ear headphones:30-250"),
    ("electronics", "computer accessories",
     "ergonomic design, rechargeable, plug and play, backlit keys, compact, "
     "quiet click, aluminum alloy, adjustable height, rgb lighting, foldable, "
     "non slip base, long battery life",
     "color", "wireless mouse:10-60, mechanical keyboard:30-160, laptop stand:15-80"),
    ("electronics", "phone accessories",
     "shockproof, scratch resistant, slim design, easy install, "
     "anti fingerprint, raised edges, lifetime warranty, magnetic, "
     "military grade, wireless charging compatible, bubble free, kickstand",
     "device, color", "phone case:8-45, screen protector:5-25, car phone mount:10-40"),
    ("fashion", "womens clothing",
     "machine washable, breathable fabric, high waist, loose fit, "
     "elastic waistband, side pockets, soft touch, wrinkle resistant, pleated, "
     "v neck, lined, stretchy",
     "color, size", "summer dress:18-70, cardigan sweater:20-80, yoga pants:15-60"),
    ("fashion", "mens clothing",
     "slim fit, wrinkle free, moisture wicking, machine washable, quick drying, "
     "stretch fabric, water repellent, button down collar, classic fit, "
     "breathable, tagless, stain resistant",
     "color, size", "polo shirt:15-60, chino pants:20-70, rain jacket:30-120"),
    ("fashion", "shoes",
     "non slip sole, arch support, memory foam insole, waterproof, lightweight, "
     "breathable mesh, wide toe box, cushioned heel, padded collar, "
     "removable insole, reflective details, vegan leather",
     "color, shoe size",
     "running shoes:30-140, hiking boots:45-180, slip on sneakers:25-90"),
    ("home", "kitchen",
     "dishwasher safe, heat resistant, stainless steel, ergonomic handle, "
     "easy to clean, pfoa free, induction compatible, rust proof, oven safe, "
     "non toxic coating, full tang, bpa free",
     "diameter, color", "frying pan:15-90, chef knife:12-110, cutting board:10-50"),
    ("home", "bedding",
     "hypoallergenic, deep pocket, machine washable, cooling, breathable, "
     "wrinkle resistant, organic cotton, all season, extra soft, quilted, "
     "fade resistant, moisture wicking",
     "bed size, color", "sheet set:20-120, comforter:30-160, contour pillow:15-70"),
    ("home", "home decor",
     "handmade, modern style, rustic style, gift ready, eco friendly, "
     "easy to hang, silent movement, vintage look, battery operated, "
     "natural wax, glass front, hand painted",
     "color, set", "scented candle:8-40, wall clock:15-80, picture frame:8-45"),
    ("garden", "gardening tools",
     "rust resistant, ergonomic grip, heavy duty, lightweight, kink free, "
     "leak proof, foldable, comfort handle, sharp blade, replaceable parts, "
     "expandable, easy storage",
     "color, length", "pruning shears:10-45, garden hose:20-90, watering can:10-40"),
    ("garden", "plants and seeds",
     "organic, beginner friendly, fast growing, non gmo, drainage holes, "
     "indoor use, eco friendly, frost hardy, pet safe, heirloom, self watering, "
     "ready to plant",
     "pack, set", "herb seed kit:10-40, succulent planter:12-50, potting soil:8-35"),
    ("garden", "outdoor furniture",
     "weather resistant, foldable, easy assembly, uv protected, rust resistant, "
     "cushioned seat, quick drying, portable, stackable, teak wood, "
     "all weather wicker, machine washable cover",
     "color, set", "patio chair:40-200, hammock:25-120, outdoor cushion:20-80"),
    ("pet", "dog supplies",
     "grain free, high protein, durable, reflective, vet approved, made in usa, "
     "easy to clean, chew resistant, limited ingredient, tangle free, "
     "padded handle, no artificial colors",
     "breed size, flavor", "dog food:15-90, dog chew toy:5-30, dog leash:8-40"),
    ("pet", "cat supplies",
     "clumping, low dust, odor control, grain free, natural ingredients, "
     "scratch resistant, easy to assemble, vet approved, flushable, "
     "multi level, sisal posts, hairball control",
     "weight, color", "cat litter:10-45, cat tree:35-150, cat treats:4-20"),
    ("pet", "small pets and fish",
     "natural ingredients, easy to clean, low dust, quiet operation, "
     "vet approved, energy saving, chew safe, long lasting, adjustable flow, "
     "sinking pellets, paper based, color enhancing",
     "weight, set", "fish food:4-25, aquarium filter:15-80, hamster bedding:6-30"),
    ("sports", "fitness",
     "non slip, extra thick, sweat resistant, portable, anti burst, "
     "adjustable resistance, quick release, eco friendly, carrying strap, "
     "latex free, foam handles, tangle free",
     "color, set", "yoga mat:15-80, resistance bands:10-45, jump rope:8-30"),
    ("sports", "outdoor recreation",
     "waterproof, lightweight, packable, insulated, windproof, easy setup, "
     "leak proof, bpa free, double wall, compact storage, three season, "
     "mummy shape",
     "color, capacity", "camping tent:50-300, sleeping bag:30-160, water bottle:10-45"),
    ("sports", "cycling",
     "adjustable fit, usb rechargeable, high visibility, anti theft, "
     "lightweight, weather resistant, quick release, ventilated, led lights, "
     "detachable visor, heavy duty, easy mount",
     "color, size", "bike helmet:25-120, bike light:10-50, bike lock:15-70"),
    ("toys", "building toys",
     "stem learning, bpa free, compatible bricks, storage box included, "
     "creative play, non toxic, ages three plus, easy to assemble, "
     "colorful pieces, magnetic connectors, instruction booklet, "
     "gender neutral",
     "set, color", "building blocks:15-80, magnetic tiles:25-100, marble run:20-70"),
    ("toys", "games and puzzles",
     "family friendly, educational, travel friendly, quick to learn, "
     "two players or more, cooperative play, award winning, thick pieces, "
     "strategy game, poster included, quick setup, glossy finish",
     "set, color", "jigsaw puzzle:10-35, board game:15-60, card game:8-30"),
    ("toys", "outdoor play",
     "battery free, durable, easy to assemble, weather resistant, non toxic, "
     "lightweight, portable, glow in the dark, easy to fly, "
     "one button operation, long range, bright colors",
     "color, set", "kite:10-40, bubble machine:15-50, water blaster:8-35"),
    ("office", "writing",
     "smudge proof, quick drying, acid free, refillable, comfortable grip, "
     "retractable, non toxic, bleed proof, archival quality, eraser included, "
     "fade resistant, assorted colors",
     "color, tip", "gel pens:5-25, mechanical pencil:4-20, highlighters:4-18"),
    ("office", "paper",
     "acid free, recycled paper, perforated pages, thick paper, bright white, "
     "college ruled, bleed resistant, spiral bound, wide ruled, lay flat, "
     "heavyweight, inkjet compatible",
     "pack, paper size", "notebook:4-25, sticky notes:3-18, printer paper:8-50"),
    ("office", "desk organization",
     "space saving, sturdy, easy assembly, stackable, non slip feet, "
     "multiple compartments, modern style, cable management, bamboo, "
     "mesh metal, label holders, rotating base",
     "color, set", "desk organizer:12-50, file folders:6-30, monitor riser:18-70"),
)
# fmt: on


@dataclass(frozen=True)
class ProductType:
    """A kind of product ("lip balm") with its department data and price range."""

    noun: str
    category: str
    department: str
    attributes: tuple[str, ...]
    option_kinds: tuple[str, ...]
    low: float
    high: float

    @property
    def path(self) -> tuple[str, str, str]:
        """Category path, top level first."""
        return (self.category, self.department, self.noun)


def _split(field: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in field.split(",") if part.strip())


@cache
def product_types() -> tuple[ProductType, ...]:
    """All 90 product types, in the order of the table above."""
    types = []
    for category, department, attrs, kinds, nouns in _DEPARTMENTS:
        for entry in _split(nouns):
            noun, _, prices = entry.partition(":")
            low, _, high = prices.partition("-")
            types.append(
                ProductType(
                    noun=noun,
                    category=category,
                    department=department,
                    attributes=_split(attrs),
                    option_kinds=_split(kinds),
                    low=float(low),
                    high=float(high),
                )
            )
    return tuple(types)


# Brand names are built from two syllable lists (e.g. "Brightvale").
BRAND_HEADS = ("Bright", "Nova", "Kind", "Maple", "Silver", "Terra", "Blue", "Sun",
               "Oak", "Cedar", "Lumen", "Harbor", "Ever", "Willow", "Iron", "Cobalt",
               "Juniper", "Amber", "Crest", "Pioneer")  # fmt: skip
BRAND_TAILS = ("vale", "wick", "ford", "nest", "field", "stone", "crest", "haven",
               "ridge", "mark", "light", "brook", "well", "line", "works",
               "craft")  # fmt: skip

# Product-neutral sentences for bullets and descriptions; none mentions an
# attribute, so a product never appears to have an attribute it lacks.
FILLER_BULLETS = (
    "Backed by a friendly customer service team.",
    "Packed with care and shipped in a strong box.",
    "Designed and tested by our in-house team.",
    "A thoughtful gift for friends and family.",
    "Simple to use right out of the box.",
    "Made to the same standard in every batch.",
)
FILLER_SENTENCES = (
    "Customers come back to it again and again.",
    "It fits easily into a busy day.",
    "Every unit is inspected before it leaves the warehouse.",
    "It makes a practical addition to any home.",
    "Thousands of shoppers rate it highly.",
)
