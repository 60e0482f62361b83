/**
 * @module Function families for synthetic training tasks: requests with no
 * BFCL entry behind them, so that the model sees many more distinct functions
 * than the tuning split's 200 entries hold. Each family is one kind of
 * function in several spellings (names and parameter names vary per task, so
 * the model must read the schema rather than remember it), with the phrases a
 * request uses to spell out each argument. Values are drawn per task.
 */
import type { Rng } from "./simulate.js";

/** A drawn argument: what the call passes and how the request spells it. */
export interface DrawnValue {
  arg: unknown;
  text: string;
}

export interface ParamSpec {
  /** Spellings of the parameter's name; one is drawn per task. */
  names: readonly string[];
  /** BFCL's type names (integer, float, string, boolean, array). */
  type: "integer" | "float" | "string" | "boolean" | "array";
  items?: "string" | "integer" | "float";
  description: string;
  enum?: readonly string[];
  /** Draws a value. */
  draw: (rng: Rng) => DrawnValue;
  /** How the request spells the argument; `{v}` is the value's text. */
  phrases: readonly string[];
  /** Optional: the request mentions it only sometimes, and the call passes it only then. */
  optional?: boolean;
  /** The sentence says the default when the parameter is left out (a description hint, as BFCL writes them). */
  defaultNote?: string;
}

export interface FunctionFamily {
  names: readonly string[];
  description: string;
  /** How a request asks for it: an imperative or a question opening, completed by the argument phrases. */
  asks: readonly string[];
  params: readonly ParamSpec[];
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
const int = (lo: number, hi: number) => (rng: Rng): DrawnValue => {
  const v = lo + Math.floor(rng() * (hi - lo + 1));
  return { arg: v, text: String(v) };
};
const float = (lo: number, hi: number, decimals: number) => (rng: Rng): DrawnValue => {
  const v = Number((lo + rng() * (hi - lo)).toFixed(decimals));
  return { arg: v, text: String(v) };
};
const money = (lo: number, hi: number) => (rng: Rng): DrawnValue => {
  const v = Number((lo + rng() * (hi - lo)).toFixed(2));
  return { arg: v, text: `$${v.toFixed(2)}` };
};
const oneOf = (xs: readonly string[]) => (rng: Rng): DrawnValue => {
  const v = pick(rng, xs);
  return { arg: v, text: v };
};
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const date = (rng: Rng): DrawnValue => {
  const y = 2015 + Math.floor(rng() * 12);
  const m = 1 + Math.floor(rng() * 12);
  const d = 1 + Math.floor(rng() * 28);
  const iso = `${y}-${String(m).padStart(2, "0")}-${String(d).padStart(2, "0")}`;
  return { arg: iso, text: rng() < 0.5 ? iso : `${MONTHS[m - 1]} ${d}, ${y}` };
};
const listOf = (xs: readonly string[], lo: number, hi: number) => (rng: Rng): DrawnValue => {
  const n = lo + Math.floor(rng() * (hi - lo + 1));
  const pool = [...xs];
  const out: string[] = [];
  while (out.length < n && pool.length > 0) out.push(pool.splice(Math.floor(rng() * pool.length), 1)[0]!);
  return { arg: out, text: out.length === 1 ? out[0]! : `${out.slice(0, -1).join(", ")} and ${out.at(-1)}` };
};
const yes = (text: string) => (): DrawnValue => ({ arg: true, text });
/** A rate the request gives in percent ("4.5%") that the function takes as a decimal (0.045), as its description says. */
const percentAsDecimal = (lo: number, hi: number) => (rng: Rng): DrawnValue => {
  const pct = Number((lo + rng() * (hi - lo)).toFixed(rng() < 0.5 ? 0 : 1));
  return { arg: Number((pct / 100).toFixed(4)), text: `${pct}%` };
};
/** A rate the request gives in percent ("4.5%") that the function takes in percent (4.5). */
const percentAsNumber = (lo: number, hi: number) => (rng: Rng): DrawnValue => {
  const pct = Number((lo + rng() * (hi - lo)).toFixed(rng() < 0.5 ? 0 : 1));
  return { arg: pct, text: rng() < 0.5 ? `${pct}%` : `${pct} percent` };
};
/** A US city the request names alone (or with its state spelled out) that the function wants as "City, ST", as its description says. */
const US_CITIES: readonly [string, string, string][] = [["Denver", "CO", "Colorado"], ["Austin", "TX", "Texas"], ["Tucson", "AZ", "Arizona"], ["Omaha", "NE", "Nebraska"], ["Raleigh", "NC", "North Carolina"], ["Boise", "ID", "Idaho"], ["Madison", "WI", "Wisconsin"], ["Savannah", "GA", "Georgia"], ["Spokane", "WA", "Washington"], ["Albany", "NY", "New York"], ["Tulsa", "OK", "Oklahoma"], ["Reno", "NV", "Nevada"]];
const cityState = (rng: Rng): DrawnValue => {
  const [city, code, state] = pick(rng, US_CITIES);
  return { arg: `${city}, ${code}`, text: rng() < 0.6 ? city : `${city}, ${state}` };
};

const CITIES = ["Reykjavik", "Accra", "Kyoto", "Valparaiso", "Tallinn", "Perth", "Quebec City", "Marrakesh", "Bergen", "Cusco", "Seville", "Hobart", "Winnipeg", "Da Nang", "Porto", "Krakow", "Tbilisi", "Cebu", "Salzburg", "Halifax", "Bordeaux", "Goa", "Kraków", "Windhoek"];
const COUNTRIES = ["Iceland", "Ghana", "Uruguay", "Estonia", "New Zealand", "Morocco", "Finland", "Colombia", "Greece", "Thailand", "Slovenia", "Jordan", "Kenya", "Croatia", "Argentina", "Malaysia"];
const PEOPLE = ["Ingrid Solberg", "Kwame Mensah", "Yuki Morimoto", "Lucia Ferreira", "Tomas Novak", "Amara Diallo", "Felix Wagner", "Priya Raman", "Mateo Rossi", "Zara Ahmed", "Oliver Brandt", "Chloe Dubois"];
const TICKERS = ["ADBE", "CSCO", "PYPL", "QCOM", "SBUX", "NKE", "DIS", "KO", "PEP", "V", "MA", "CRM", "UBER", "SHOP"];
const CURRENCIES = ["USD", "EUR", "JPY", "GBP", "CHF", "CAD", "AUD", "SEK", "INR", "BRL"];
const LANGUAGES = ["French", "German", "Japanese", "Spanish", "Portuguese", "Korean", "Italian", "Swahili", "Dutch", "Turkish"];
const CUISINES = ["Thai", "Ethiopian", "Peruvian", "Korean", "Lebanese", "Mexican", "Vietnamese", "Georgian", "Indian", "Greek"];
const GENRES = ["jazz", "blues", "techno", "folk", "reggae", "classical", "hip hop", "country", "soul", "punk"];
const SPECIES = ["red fox", "snow leopard", "bald eagle", "humpback whale", "monarch butterfly", "gray wolf", "sea otter", "koala", "barn owl", "green turtle"];
const ELEMENTS = ["carbon", "oxygen", "iron", "neon", "sodium", "copper", "helium", "silicon", "gold", "zinc"];
const INGREDIENTS = ["chickpeas", "spinach", "salmon", "tofu", "lentils", "mushrooms", "quinoa", "eggplant", "feta", "basil", "rice", "paprika"];
const BOOKS = ["The Silent Orchard", "Northern Lights Over Oslo", "A Map of Small Things", "The Glass Harbor", "Winter Protocol", "Letters from Lima"];
const TEAMS = ["Riverside Hawks", "Lakeside Comets", "Harbor City FC", "Mountain Rangers", "Desert Suns", "Coastal Kings"];
const PLANETS = ["Mercury", "Venus", "Mars", "Jupiter", "Saturn", "Uranus", "Neptune"];
const SKILLS = ["Python", "SQL", "Kubernetes", "data analysis", "project management", "UX design", "machine learning", "accounting"];
const DEPARTMENTS = ["engineering", "marketing", "sales", "finance", "support", "legal"];
const SHAPES = ["circle", "square", "triangle", "hexagon", "rectangle"];

export const FAMILIES: readonly FunctionFamily[] = [
  {
    names: ["bmi.from_measurements", "health.bmi_calculate", "bmi_calculator.compute"],
    description: "Calculate the body mass index (BMI) of a person from weight and height.",
    asks: ["Calculate the BMI of a person", "What is the body mass index of someone", "Compute the BMI for a patient"],
    params: [
      { names: ["weight", "weight_kg", "mass"], type: "float", description: "Weight of the person in kilograms.", draw: float(45, 120, 1), phrases: ["weighing {v} kg", "with a weight of {v} kilograms"] },
      { names: ["height", "height_m"], type: "float", description: "Height of the person in meters.", draw: float(1.45, 2.05, 2), phrases: ["and {v} m tall", "and a height of {v} meters"] },
    ],
  },
  {
    names: ["money.exchange", "currency.convert_amount", "fx.convert"],
    description: "Convert an amount of money from one currency to another at today's rate.",
    asks: ["Convert", "How much is", "Please convert"],
    params: [
      { names: ["amount", "value"], type: "float", description: "The amount of money to convert.", draw: float(5, 5000, 2), phrases: ["{v}"] },
      { names: ["from_currency", "source_currency", "base"], type: "string", description: "Three-letter code of the currency to convert from.", draw: oneOf(CURRENCIES), phrases: ["{v}"] },
      { names: ["to_currency", "target_currency", "quote"], type: "string", description: "Three-letter code of the currency to convert to.", draw: oneOf(CURRENCIES), phrases: ["into {v}", "to {v}"] },
    ],
  },
  {
    names: ["weather.get_forecast", "get_weather_forecast", "forecast.daily"],
    description: "Get the weather forecast for a city for a number of days ahead.",
    asks: ["Get the weather forecast", "What will the weather be like", "Show me the forecast"],
    params: [
      { names: ["city", "location"], type: "string", description: "The city, e.g. Kyoto.", draw: oneOf(CITIES), phrases: ["in {v}", "for {v}"] },
      { names: ["days", "num_days", "horizon_days"], type: "integer", description: "How many days ahead to forecast.", draw: int(2, 14), phrases: ["for the next {v} days", "over {v} days"] },
      { names: ["units", "unit_system"], type: "string", description: "Units of the result. Default is 'metric'.", enum: ["metric", "imperial"], draw: oneOf(["imperial"]), phrases: ["in {v} units"], optional: true },
    ],
  },
  {
    names: ["circle_area.compute", "calculate_circle_area", "shapes.circle_area"],
    description: "Calculate the area of a circle given its radius.",
    asks: ["Calculate the area of a circle", "What is the area of a circle", "Find the area of a circle"],
    params: [
      { names: ["radius", "r"], type: "integer", description: "The radius of the circle.", draw: int(2, 60), phrases: ["with a radius of {v}", "whose radius is {v}"] },
      { names: ["unit", "units"], type: "string", description: "Unit of the radius. Default is 'cm'.", draw: oneOf(["meters", "inches", "feet", "mm"]), phrases: ["{v}"], optional: true },
    ],
  },
  {
    names: ["geometry.rectangle_perimeter", "calc_perimeter_rectangle", "rectangle.perimeter"],
    description: "Calculate the perimeter of a rectangle from its length and width.",
    asks: ["Find the perimeter of a rectangle", "What is the perimeter of a rectangle", "Calculate the perimeter of a rectangle"],
    params: [
      { names: ["length", "long_side"], type: "integer", description: "Length of the rectangle.", draw: int(3, 90), phrases: ["with a length of {v}", "that is {v} units long"] },
      { names: ["width", "short_side"], type: "integer", description: "Width of the rectangle.", draw: int(2, 50), phrases: ["and a width of {v}", "and {v} units wide"] },
    ],
  },
  {
    names: ["finance.compound_interest", "interest.compound_value", "investment.future_value"],
    description: "Calculate the future value of an investment with compound interest.",
    asks: ["Calculate the compound interest", "What will an investment be worth", "Compute the future value of an investment"],
    params: [
      { names: ["principal", "initial_amount"], type: "float", description: "The initial investment.", draw: money(500, 50000), phrases: ["for {v}", "of {v}"] },
      { names: ["annual_rate", "rate", "interest_rate"], type: "float", description: "Annual interest rate as a decimal, e.g. 0.05 for 5%.", draw: percentAsDecimal(1, 12), phrases: ["at an annual rate of {v}", "with a yearly rate of {v}"] },
      { names: ["years", "time_years", "duration"], type: "integer", description: "Number of years the money is invested.", draw: int(2, 40), phrases: ["over {v} years", "for {v} years"] },
      { names: ["compounds_per_year", "n"], type: "integer", description: "How many times a year interest is compounded. Default is 1.", draw: int(2, 12), phrases: ["compounded {v} times a year"], optional: true },
    ],
  },
  {
    names: ["stock.get_price", "get_stock_quote", "market.quote"],
    description: "Get the latest price of a stock by its ticker symbol.",
    asks: ["Get the current stock price", "What is the latest share price", "Look up the stock quote"],
    params: [
      { names: ["ticker", "symbol", "stock_symbol"], type: "string", description: "The stock's ticker symbol, e.g. KO.", draw: oneOf(TICKERS), phrases: ["of {v}", "for {v}"] },
      { names: ["exchange", "market"], type: "string", description: "Stock exchange. Default is 'NASDAQ'.", draw: oneOf(["NYSE", "LSE", "TSX"]), phrases: ["on the {v}"], optional: true },
    ],
  },
  {
    names: ["translate_text", "translation.translate", "language.translate_phrase"],
    description: "Translate a phrase into another language.",
    asks: ["Translate", "Please translate", "How do you say"],
    params: [
      { names: ["text", "phrase"], type: "string", description: "The text to translate.", draw: oneOf(["good morning", "where is the train station", "thank you very much", "I would like a coffee", "see you tomorrow", "how much does this cost"]), phrases: ["'{v}'"] },
      { names: ["target_language", "to_language", "language"], type: "string", description: "The language to translate into.", draw: oneOf(LANGUAGES), phrases: ["into {v}", "in {v}"] },
    ],
  },
  {
    names: ["restaurant.search", "eateries.search", "dining.find_places"],
    description: "Find restaurants of a cuisine in a city, optionally under a price level.",
    asks: ["Find restaurants", "Search for restaurants", "I'm looking for places to eat"],
    params: [
      { names: ["cuisine", "food_type"], type: "string", description: "The type of food, e.g. Thai.", draw: oneOf(CUISINES), phrases: ["serving {v} food", "with {v} cuisine"] },
      { names: ["city", "location", "area"], type: "string", description: "The city to search in.", draw: oneOf(CITIES), phrases: ["in {v}"] },
      { names: ["max_price", "price_level"], type: "integer", description: "Highest price level from 1 to 4. Default is 4.", draw: int(1, 3), phrases: ["at price level {v} or below"], optional: true },
    ],
  },
  {
    names: ["hotel.book_room", "stay.book_room", "lodging.reserve"],
    description: "Book a hotel room in a city for a number of nights from a check-in date.",
    asks: ["Book a hotel room", "Reserve a room", "Please book me a hotel"],
    params: [
      { names: ["city", "destination"], type: "string", description: "The city of the hotel.", draw: oneOf(CITIES), phrases: ["in {v}"] },
      { names: ["check_in", "check_in_date", "start_date"], type: "string", description: "Check-in date in the format YYYY-MM-DD.", draw: date, phrases: ["from {v}", "starting {v}"] },
      { names: ["nights", "num_nights", "stay_length"], type: "integer", description: "Number of nights.", draw: int(1, 14), phrases: ["for {v} nights"] },
      { names: ["guests", "num_guests"], type: "integer", description: "Number of guests. Default is 1.", draw: int(2, 5), phrases: ["for {v} guests"], optional: true },
    ],
  },
  {
    names: ["flight.search", "search_flights", "air_travel.find_flights"],
    description: "Search flights between two cities on a date.",
    asks: ["Search for flights", "Find me a flight", "Look for flights"],
    params: [
      { names: ["origin", "departure_city", "from_city"], type: "string", description: "The departure city.", draw: oneOf(CITIES), phrases: ["from {v}"] },
      { names: ["destination", "arrival_city", "to_city"], type: "string", description: "The arrival city.", draw: oneOf(CITIES), phrases: ["to {v}"] },
      { names: ["date", "departure_date", "travel_date"], type: "string", description: "Travel date in the format YYYY-MM-DD.", draw: date, phrases: ["on {v}"] },
      { names: ["cabin", "cabin_class"], type: "string", description: "Cabin class. Default is 'economy'.", enum: ["economy", "premium", "business", "first"], draw: oneOf(["business", "premium", "first"]), phrases: ["in {v} class"], optional: true },
    ],
  },
  {
    names: ["integers.gcd", "greatest_common_divisor", "arith.common_divisor"],
    description: "Find the greatest common divisor of two integers.",
    asks: ["Find the greatest common divisor", "What is the GCD", "Calculate the greatest common divisor"],
    params: [
      { names: ["a", "num1", "first_number"], type: "integer", description: "The first integer.", draw: int(12, 900), phrases: ["of {v}"] },
      { names: ["b", "num2", "second_number"], type: "integer", description: "The second integer.", draw: int(12, 900), phrases: ["and {v}"] },
    ],
  },
  {
    names: ["arith.raise_power", "calculate_power", "arithmetic.exponentiate"],
    description: "Raise a base to an exponent, optionally modulo a number.",
    asks: ["Calculate", "What is", "Compute"],
    params: [
      { names: ["base", "x"], type: "integer", description: "The base.", draw: int(2, 30), phrases: ["{v}"] },
      { names: ["exponent", "power", "y"], type: "integer", description: "The exponent.", draw: int(2, 12), phrases: ["raised to the power of {v}", "to the power {v}"] },
      { names: ["mod", "modulus"], type: "integer", description: "Optional modulus. Default is none.", draw: int(5, 97), phrases: ["modulo {v}"], optional: true },
    ],
  },
  {
    names: ["physics.kinetic_energy", "calculate_kinetic_energy", "mechanics.kinetic_energy"],
    description: "Calculate the kinetic energy of a moving object from its mass and velocity.",
    asks: ["Calculate the kinetic energy of an object", "What is the kinetic energy of a body", "Find the kinetic energy of a car"],
    params: [
      { names: ["mass", "mass_kg"], type: "float", description: "Mass in kilograms.", draw: float(0.5, 2000, 1), phrases: ["with a mass of {v} kg", "weighing {v} kg"] },
      { names: ["velocity", "speed"], type: "float", description: "Velocity in meters per second.", draw: float(1, 90, 1), phrases: ["moving at {v} m/s", "travelling at {v} meters per second"] },
    ],
  },
  {
    names: ["physics.ohms_law_current", "calculate_current", "circuit.current"],
    description: "Calculate the electric current through a resistor from voltage and resistance.",
    asks: ["Calculate the current in a circuit", "What current flows through a resistor", "Find the electric current"],
    params: [
      { names: ["voltage", "V", "volts"], type: "float", description: "Voltage in volts.", draw: float(1, 240, 1), phrases: ["with a voltage of {v} V", "at {v} volts"] },
      { names: ["resistance", "R", "ohms"], type: "float", description: "Resistance in ohms.", draw: float(1, 1000, 1), phrases: ["and a resistance of {v} ohms", "across {v} ohms"] },
    ],
  },
  {
    names: ["chemistry.molar_mass", "get_molar_mass", "element.atomic_weight"],
    description: "Get the atomic weight of a chemical element.",
    asks: ["What is the atomic weight", "Get the molar mass", "Look up the atomic mass"],
    params: [
      { names: ["element", "element_name"], type: "string", description: "Name of the element, e.g. iron.", draw: oneOf(ELEMENTS), phrases: ["of {v}"] },
      { names: ["precision", "decimals"], type: "integer", description: "Decimal places to return. Default is 2.", draw: int(3, 6), phrases: ["to {v} decimal places"], optional: true },
    ],
  },
  {
    names: ["wildlife.population_trend", "get_species_population", "ecology.population_estimate"],
    description: "Estimate the population of an animal species in a country over a number of years.",
    asks: ["Estimate the population trend", "How has the population changed", "Get the population estimate"],
    params: [
      { names: ["species", "animal"], type: "string", description: "The species, e.g. red fox.", draw: oneOf(SPECIES), phrases: ["of the {v}", "for the {v}"] },
      { names: ["country", "region"], type: "string", description: "The country.", draw: oneOf(COUNTRIES), phrases: ["in {v}"] },
      { names: ["years", "period_years"], type: "integer", description: "How many past years to cover.", draw: int(3, 30), phrases: ["over the last {v} years", "for the past {v} years"] },
    ],
  },
  {
    names: ["kitchen.recipe_search", "recipes.lookup_by_ingredients", "cooking.search_recipes"],
    description: "Find recipes that use the given ingredients, under a cooking time.",
    asks: ["Find a recipe", "Suggest recipes", "Look up recipes"],
    params: [
      { names: ["ingredients", "ingredient_list"], type: "array", items: "string", description: "Ingredients the recipe must use.", draw: listOf(INGREDIENTS, 1, 3), phrases: ["with {v}", "that uses {v}"] },
      { names: ["max_minutes", "max_time", "time_limit"], type: "integer", description: "Longest cooking time in minutes.", draw: int(10, 90), phrases: ["ready in under {v} minutes", "taking at most {v} minutes"] },
      { names: ["vegetarian", "is_vegetarian"], type: "boolean", description: "Only vegetarian recipes. Default is false.", draw: yes("vegetarian"), phrases: ["that is {v}"], optional: true },
    ],
  },
  {
    names: ["music.top_tracks", "get_top_songs", "charts.top_songs"],
    description: "Get the most played songs of a genre in a country.",
    asks: ["Get the top songs", "What are the most played tracks", "List the chart toppers"],
    params: [
      { names: ["genre", "music_genre"], type: "string", description: "The genre, e.g. jazz.", draw: oneOf(GENRES), phrases: ["in {v}", "of the {v} genre"] },
      { names: ["country", "market"], type: "string", description: "The country.", draw: oneOf(COUNTRIES), phrases: ["in {v}"] },
      { names: ["limit", "count", "top_n"], type: "integer", description: "How many songs. Default is 10.", draw: int(3, 50), phrases: ["limited to {v} songs", "top {v}"], optional: true },
    ],
  },
  {
    names: ["library.find_book", "search_books", "books.lookup"],
    description: "Look up a book by title and return its availability at a library branch.",
    asks: ["Check whether the library has", "Find the book", "Is the book"],
    params: [
      { names: ["title", "book_title"], type: "string", description: "Title of the book.", draw: oneOf(BOOKS), phrases: ["'{v}'"] },
      { names: ["branch", "library_branch", "city"], type: "string", description: "Library branch city.", draw: oneOf(CITIES), phrases: ["at the {v} branch", "in the {v} library"] },
    ],
  },
  {
    names: ["sports.match_result", "get_game_score", "league.match_score"],
    description: "Get the result of a team's match on a date.",
    asks: ["What was the score", "Get the match result", "Find the final score"],
    params: [
      { names: ["team", "team_name", "club"], type: "string", description: "The team's name.", draw: oneOf(TEAMS), phrases: ["of the {v}", "for the {v}"] },
      { names: ["date", "match_date", "game_date"], type: "string", description: "Date of the match in YYYY-MM-DD.", draw: date, phrases: ["on {v}"] },
    ],
  },
  {
    names: ["astronomy.planet_distance", "get_planet_distance", "space.distance_between"],
    description: "Distance between two planets of the solar system in a unit.",
    asks: ["How far is", "What is the distance from", "Calculate the distance between"],
    params: [
      { names: ["planet_a", "from_planet", "origin"], type: "string", description: "The first planet.", draw: oneOf(PLANETS), phrases: ["{v}"] },
      { names: ["planet_b", "to_planet", "target"], type: "string", description: "The second planet.", draw: oneOf(PLANETS), phrases: ["to {v}", "and {v}"] },
      { names: ["unit", "distance_unit"], type: "string", description: "Unit of the distance. Default is 'km'.", enum: ["km", "miles", "au"], draw: oneOf(["miles", "au"]), phrases: ["in {v}"], optional: true },
    ],
  },
  {
    names: ["hr.list_employees", "get_employees_by_department", "staff.directory_search"],
    description: "List employees of a department who have a skill.",
    asks: ["List the employees", "Who are the staff members", "Find people"],
    params: [
      { names: ["department", "team", "dept"], type: "string", description: "The department.", draw: oneOf(DEPARTMENTS), phrases: ["in {v}", "from the {v} department"] },
      { names: ["skill", "required_skill"], type: "string", description: "A skill the employee has.", draw: oneOf(SKILLS), phrases: ["who know {v}", "with {v} skills"] },
      { names: ["senior_only", "only_senior"], type: "boolean", description: "Only senior staff. Default is false.", draw: yes("senior"), phrases: ["who are {v}"], optional: true },
    ],
  },
  {
    names: ["calendar.schedule_meeting", "create_meeting", "meetings.book"],
    description: "Schedule a meeting with a person on a date for a number of minutes.",
    asks: ["Schedule a meeting", "Set up a meeting", "Book a call"],
    params: [
      { names: ["attendee", "with_person", "participant"], type: "string", description: "Full name of the other person.", draw: oneOf(PEOPLE), phrases: ["with {v}"] },
      { names: ["date", "meeting_date"], type: "string", description: "Date in YYYY-MM-DD.", draw: date, phrases: ["on {v}"] },
      { names: ["duration_minutes", "minutes", "length"], type: "integer", description: "Length in minutes.", draw: int(15, 120), phrases: ["for {v} minutes", "lasting {v} minutes"] },
    ],
  },
  {
    names: ["email.send", "outbox.send_message", "mail.compose_and_send"],
    description: "Send an email to a person with a subject.",
    asks: ["Send an email", "Email", "Please write an email"],
    params: [
      { names: ["recipient", "to", "recipient_name"], type: "string", description: "Full name of the recipient.", draw: oneOf(PEOPLE), phrases: ["to {v}"] },
      { names: ["subject", "title"], type: "string", description: "Subject line.", draw: oneOf(["Quarterly report", "Lunch on Friday", "Contract renewal", "Project kickoff", "Invoice 4471"]), phrases: ["with the subject '{v}'", "titled '{v}'"] },
      { names: ["urgent", "high_priority"], type: "boolean", description: "Mark as urgent. Default is false.", draw: yes("urgent"), phrases: ["marked {v}"], optional: true },
    ],
  },
  {
    names: ["shapes.regular_polygon_area", "polygon.area", "calculate_polygon_area"],
    description: "Area of a regular polygon from its number of sides and side length.",
    asks: ["Find the area of a regular polygon", "Calculate the area of a regular polygon", "What is the area of a regular polygon"],
    params: [
      { names: ["sides", "num_sides", "n_sides"], type: "integer", description: "Number of sides.", draw: int(5, 12), phrases: ["with {v} sides"] },
      { names: ["side_length", "length"], type: "float", description: "Length of one side.", draw: float(1, 30, 1), phrases: ["and a side length of {v}", "each {v} long"] },
    ],
  },
  {
    names: ["statistics.mean", "numbers.mean_value", "stats.average"],
    description: "Calculate the average of a list of numbers.",
    asks: ["Calculate the average", "What is the mean", "Find the mean"],
    params: [
      {
        names: ["numbers", "values", "data"],
        type: "array",
        items: "integer",
        description: "The numbers.",
        draw: (rng) => {
          const xs = Array.from({ length: 3 + Math.floor(rng() * 4) }, () => 1 + Math.floor(rng() * 99));
          return { arg: xs, text: xs.join(", ") };
        },
        phrases: ["of {v}", "of the numbers {v}"],
      },
    ],
  },
  {
    names: ["probability.binomial", "binomial_probability", "stats.binomial_pmf"],
    description: "Probability of exactly k successes in n independent trials with success probability p.",
    asks: ["What is the probability of getting", "Calculate the probability of", "Find the chance of"],
    params: [
      { names: ["k", "successes"], type: "integer", description: "Number of successes.", draw: int(1, 9), phrases: ["exactly {v} successes"] },
      { names: ["n", "trials"], type: "integer", description: "Number of trials.", draw: int(10, 30), phrases: ["in {v} trials"] },
      { names: ["p", "probability"], type: "float", description: "Probability of success in one trial.", draw: float(0.05, 0.95, 2), phrases: ["with a success probability of {v}"] },
    ],
  },
  {
    names: ["real_estate.mortgage_payment", "calculate_mortgage", "loan.monthly_payment"],
    description: "Monthly payment of a fixed-rate loan.",
    asks: ["Calculate the monthly payment", "What would the monthly mortgage be", "Compute the monthly installment"],
    params: [
      { names: ["loan_amount", "principal"], type: "float", description: "The amount borrowed.", draw: money(20000, 900000), phrases: ["for a loan of {v}", "on {v}"] },
      { names: ["annual_rate", "interest_rate"], type: "float", description: "Annual interest rate in percent, e.g. 6.5 for 6.5%.", draw: percentAsNumber(1.5, 9), phrases: ["at {v}", "with an interest rate of {v}"] },
      { names: ["term_years", "years"], type: "integer", description: "Loan term in years.", draw: int(5, 30), phrases: ["over {v} years"] },
    ],
  },
  {
    names: ["travel.time_zone", "get_local_time", "timezone.current_time"],
    description: "Get the current local time in a city.",
    asks: ["What time is it", "Get the local time", "Tell me the current time"],
    params: [
      { names: ["city", "location", "place"], type: "string", description: "The city.", draw: oneOf(CITIES), phrases: ["in {v}"] },
      { names: ["format_24h", "use_24_hour"], type: "boolean", description: "24-hour format. Default is false.", draw: yes("24-hour format"), phrases: ["in {v}"], optional: true },
    ],
  },
  {
    names: ["country.population", "census.population_in_year", "demographics.population"],
    description: "Population of a country in a given year.",
    asks: ["What was the population", "Get the population", "How many people lived"],
    params: [
      { names: ["country", "nation"], type: "string", description: "The country.", draw: oneOf(COUNTRIES), phrases: ["of {v}", "in {v}"] },
      { names: ["year"], type: "integer", description: "The year.", draw: int(1960, 2023), phrases: ["in {v}"] },
    ],
  },
  {
    names: ["geometry.shape_area", "area_of_shape", "shape.compute_area"],
    description: "Area of a basic shape from one size measure (radius for a circle, side for the others).",
    asks: ["Compute the area of a", "What is the area of a", "Find the area of a"],
    params: [
      { names: ["shape", "shape_type"], type: "string", description: "The shape.", enum: SHAPES, draw: oneOf(SHAPES), phrases: ["{v}"] },
      { names: ["size", "dimension"], type: "float", description: "Radius or side length.", draw: float(1, 40, 1), phrases: ["of size {v}", "with a size of {v}"] },
    ],
  },
  {
    names: ["ride.estimate_fare", "estimate_taxi_fare", "transport.fare_estimate"],
    description: "Estimate a taxi fare for a distance in a city.",
    asks: ["Estimate the taxi fare", "How much would a taxi cost", "Get a fare estimate"],
    params: [
      { names: ["distance_km", "distance"], type: "float", description: "Trip distance in kilometers.", draw: float(1, 60, 1), phrases: ["for {v} km", "for a {v} kilometer ride"] },
      { names: ["city", "location"], type: "string", description: "The city.", draw: oneOf(CITIES), phrases: ["in {v}"] },
      { names: ["night", "night_rate"], type: "boolean", description: "Night rate applies. Default is false.", draw: yes("at night"), phrases: ["{v}"], optional: true },
    ],
  },
  {
    names: ["grades.final_score", "calculate_weighted_grade", "education.weighted_average"],
    description: "Weighted final score from an exam score and a homework score and the exam's weight.",
    asks: ["Calculate the final grade", "What is the weighted score", "Compute the final score"],
    params: [
      { names: ["exam_score", "exam"], type: "integer", description: "Exam score out of 100.", draw: int(40, 100), phrases: ["with an exam score of {v}"] },
      { names: ["homework_score", "homework"], type: "integer", description: "Homework score out of 100.", draw: int(40, 100), phrases: ["a homework score of {v}"] },
      { names: ["exam_weight", "weight"], type: "float", description: "Weight of the exam between 0 and 1.", draw: float(0.3, 0.8, 2), phrases: ["and an exam weight of {v}"] },
    ],
  },
  {
    names: ["vehicle.fuel_cost", "calculate_trip_fuel_cost", "trip.fuel_cost"],
    description: "Fuel cost of a trip from distance, fuel economy and fuel price.",
    asks: ["How much will the fuel cost", "Calculate the fuel cost", "Estimate the fuel cost"],
    params: [
      { names: ["distance", "distance_km"], type: "integer", description: "Trip distance in kilometers.", draw: int(20, 1500), phrases: ["for a {v} km trip", "to drive {v} km"] },
      { names: ["consumption", "liters_per_100km"], type: "float", description: "Fuel use in liters per 100 km.", draw: float(3.5, 14, 1), phrases: ["at {v} liters per 100 km", "using {v} L/100km"] },
      { names: ["price_per_liter", "fuel_price"], type: "float", description: "Fuel price per liter.", draw: float(1.1, 2.4, 2), phrases: ["with fuel at {v} per liter"] },
    ],
  },
  {
    names: ["weather.current_conditions", "conditions.now", "meteo.current"],
    description: "Current weather conditions in a US city.",
    asks: ["What's the weather like", "Get the current conditions", "How is the weather right now"],
    params: [
      { names: ["location", "city_state"], type: "string", description: "The city and state, e.g. Austin, TX.", draw: cityState, phrases: ["in {v}"] },
      { names: ["unit", "temperature_unit"], type: "string", description: "Temperature unit. Default is 'fahrenheit'.", enum: ["celsius", "fahrenheit"], draw: oneOf(["celsius"]), phrases: ["in {v}"], optional: true },
    ],
  },
  {
    names: ["tax.sales_tax_estimate", "estimate_sales_tax", "retail.tax_due"],
    description: "Sales tax due on a purchase in a US city.",
    asks: ["How much sales tax is due", "Estimate the sales tax", "Calculate the tax"],
    params: [
      { names: ["amount", "purchase_amount"], type: "float", description: "The purchase amount in dollars.", draw: money(5, 900), phrases: ["on a purchase of {v}", "on {v}"] },
      { names: ["location", "city"], type: "string", description: "City and state of the purchase, e.g. Tulsa, OK.", draw: cityState, phrases: ["in {v}"] },
    ],
  },
  {
    names: ["savings.interest_earned", "deposit.simple_interest", "bank.interest_on_deposit"],
    description: "Simple interest earned on a deposit.",
    asks: ["How much interest will I earn", "Calculate the interest earned", "Work out the simple interest"],
    params: [
      { names: ["principal", "deposit"], type: "float", description: "The deposit in dollars.", draw: money(100, 20000), phrases: ["on {v}", "on a deposit of {v}"] },
      { names: ["rate", "interest_rate"], type: "float", description: "Yearly interest rate as a decimal (0.03 means 3%).", draw: percentAsDecimal(1, 9), phrases: ["at {v} a year", "at a rate of {v}"] },
      { names: ["years", "term"], type: "integer", description: "Years on deposit.", draw: int(1, 15), phrases: ["over {v} years", "for {v} years"] },
    ],
  },
  {
    names: ["loan.apr_payment", "car_loan.monthly_payment", "credit.installment"],
    description: "Monthly payment of a loan from its APR in percent.",
    asks: ["What is the monthly payment", "Calculate the installment", "Work out the monthly payment"],
    params: [
      { names: ["amount", "loan_amount"], type: "float", description: "Amount borrowed in dollars.", draw: money(2000, 60000), phrases: ["on a loan of {v}", "for {v}"] },
      { names: ["apr", "apr_percent"], type: "float", description: "Annual percentage rate in percent, e.g. 7.9 for 7.9%.", draw: percentAsNumber(2, 24), phrases: ["at an APR of {v}", "at {v} APR"] },
      { names: ["months", "term_months"], type: "integer", description: "Loan term in months.", draw: int(12, 84), phrases: ["over {v} months", "for {v} months"] },
    ],
  },
];
